"""The Python helpers' argument handling and arithmetic (no torch, no GPU needed)."""
import json
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "scripts"))
import compare_pytorch  # noqa: E402
import plot_results  # noqa: E402
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

    def test_decoders_take_gpubench_defaults_and_inference_mode(self):
        gpt2 = pytorch_reference.parse_args(["--model", "gpt2"])
        self.assertEqual((gpt2["batch_size"], gpt2["seq_len"], gpt2["optimizer"]["name"], gpt2["mode"]),
                         (8, 1024, "adamw", "train"))
        llama = pytorch_reference.parse_args(["--model", "llama", "--mode", "inference", "--precision", "fp16", "--graph"])
        self.assertEqual((llama["batch_size"], llama["seq_len"], llama["mode"]), (4, 2048, "inference"))
        self.assertEqual(llama["optimizer"]["weight_decay"], 0.0)  # the registry's recipe for decoders
        with self.assertRaises(SystemExit):
            pytorch_reference.parse_args(["--model", "gpt2", "--mode", "serve"])

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


def record(batch, rate, trace=None):
    return {"schema": "gpubench.run", "status": "ok",
            "scenario": {"model": "resnet50", "batch_size": batch, "precision": "bf16", "device": "cuda:0",
                         "output": f"bs{batch}.json"},
            "precision": {"resolved": "bf16"}, "execution": {"mode": "eager"}, "model": {"sample_unit": "images"},
            "summary": {"samples_per_s": rate, "bounded_by": "compute"},
            "epochs": [{"seconds": 10.0}, {"seconds": 9.8}],
            "telemetry": {"trace_path": trace} if trace else {},
            "profile": {"categories": [{"category": "gemm_conv", "ms_per_step": 20.0 * batch / 64},
                                       {"category": "normalization", "ms_per_step": 9.0},
                                       {"category": "elementwise", "ms_per_step": 4.5}]} if batch >= 128 else None}


class PlotTest(unittest.TestCase):
    def test_renders_every_chart_from_sample_records(self):
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            self.fail("python3-matplotlib is needed for gpubench report (scripts/bootstrap.sh installs it)")
        with tempfile.TemporaryDirectory() as d:
            trace = os.path.join(d, "trace.csv")
            with open(trace, "w") as f:
                f.write("t_s,power_w,energy_j,sm_clock_mhz,mem_clock_mhz,temperature_c,gpu_util_pct,mem_util_pct,"
                        "clock_event_reasons\n")
                for i in range(50):
                    f.write(f"{i * 0.1:.1f},{500 + i},{i * 50},1980,3201,{40 + i // 10},100,60,0x0\n")
            paths = []
            for batch, rate in ((64, 4000.0), (128, 4400.0), (256, 4700.0)):
                p = os.path.join(d, f"bs{batch}.json")
                json.dump(record(batch, rate, trace if batch == 256 else None), open(p, "w"))
                paths.append(p)
            cmp = os.path.join(d, "cmp.json")
            json.dump({"comparisons": [{"label": "a", "ratio": 0.95, "ci_low": 0.94, "ci_high": 0.96,
                                        "verdict": "regression"},
                                       {"label": "b", "ratio": 1.01, "ci_low": 0.99, "ci_high": 1.03,
                                        "verdict": "no significant change"}]}, open(cmp, "w"))
            out = os.path.join(d, "out")
            self.assertEqual(plot_results.main(["--out", out, "--compare", cmp] + paths), 0)
            for name in ("throughput.png", "epoch_time.png", "telemetry.png", "batch_size.png", "compare.png",
                         "profile.png"):
                with open(os.path.join(out, name), "rb") as f:
                    data = f.read()
                self.assertTrue(data.startswith(b"\x89PNG"), name)
                self.assertGreater(len(data), 5000, name)

    def test_records_without_data_draw_nothing_rather_than_fail(self):
        with tempfile.TemporaryDirectory() as d:
            p = os.path.join(d, "failed.json")
            r = record(64, 0.0)
            r["status"] = "oom"
            json.dump(r, open(p, "w"))
            self.assertEqual(plot_results.plot_all(plot_results.load_records([p]), d), [])


if __name__ == "__main__":
    unittest.main()
