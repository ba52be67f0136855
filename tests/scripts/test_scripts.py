"""The Python helpers' argument handling and arithmetic (no torch, no GPU needed)."""
import json
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "scripts"))
import compare_pytorch  # noqa: E402
import pytorch_reference  # noqa: E402


class ReferenceArgumentsTest(unittest.TestCase):
    def test_scenario_file_is_read_and_flags_override_it(self):
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
            json.dump({"model": "bert-base", "batch_size": 64, "precision": "bf16",
                       "optimizer": {"name": "adamw", "lr": 1e-4}}, f)
        cfg = pytorch_reference.parse_args(["--config", f.name, "--batch-size", "32"])
        os.unlink(f.name)
        self.assertEqual(cfg["model"], "bert-base")
        self.assertEqual(cfg["batch_size"], 32)
        self.assertEqual(cfg["precision"], "bf16")
        self.assertEqual(cfg["optimizer"]["name"], "adamw")
        self.assertEqual(cfg["optimizer"]["lr"], 1e-4)

    def test_model_defaults_follow_the_gpubench_registry(self):
        resnet = pytorch_reference.parse_args([])
        self.assertEqual((resnet["model"], resnet["batch_size"], resnet["optimizer"]["name"]), ("resnet50", 256, "sgd"))
        bert = pytorch_reference.parse_args(["--model", "bert-base"])
        self.assertEqual((bert["batch_size"], bert["optimizer"]["name"], bert["optimizer"]["lr"]), (32, "adamw", 2e-5))

    def test_graph_implies_fused_and_refuses_fp16(self):
        self.assertTrue(pytorch_reference.parse_args(["--graph"])["fused"])
        with self.assertRaises(SystemExit):
            pytorch_reference.parse_args(["--graph", "--precision", "fp16"])
        with self.assertRaises(SystemExit):
            pytorch_reference.parse_args(["--batch-size", "64", "--dataset-size", "32"])


class CompareRatiosTest(unittest.TestCase):
    def test_cross_ratios_pair_rounds(self):
        rate = lambda v: {"rate": v}
        runs = {"x_eager": {1: {"gpubench": rate(100), "pytorch": rate(50)}, 2: {"gpubench": rate(100), "pytorch": rate(100)}},
                "x_graph": {1: {"gpubench": rate(200), "pytorch": rate(100)}, 2: {"gpubench": rate(150)}}}
        c = compare_pytorch.cross_ratios(runs)["x"]
        self.assertEqual(c["gb_graph_over_pt_eager"]["n"], 2)
        self.assertAlmostEqual(c["gb_graph_over_pt_eager"]["max"], 4.0)
        self.assertAlmostEqual(c["gb_graph_over_pt_eager"]["min"], 1.5)
        self.assertAlmostEqual(c["gb_graph_over_gb_eager"]["mean"], 1.75)
        self.assertEqual(c["pt_graph_over_pt_eager"]["n"], 1)  # round 2 has no PyTorch graph run


if __name__ == "__main__":
    unittest.main()
