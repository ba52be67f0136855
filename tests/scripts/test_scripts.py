"""The Python helpers' argument handling and arithmetic (no torch, no GPU needed)."""
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "scripts"))
import bench  # noqa: E402
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

    def test_model_defaults_are_the_ones_gpubench_publishes(self):
        # `gpubench list --format json` ($GPUBENCH_BINARY): a default changed in the C++ registry changes these too.
        catalog = pytorch_reference.gpubench_catalog()
        self.assertEqual(catalog["schema"], "gpubench.models")
        self.assertEqual({m["name"] for m in catalog["models"]}, {"resnet50", "bert-base", "sd-unet", "gpt2", "llama"})
        for m in catalog["models"]:
            d = m["gpu_defaults"]
            cfg = pytorch_reference.parse_args(["--model", m["name"]])
            self.assertEqual(cfg["batch_size"], d["batch_size"], m["name"])
            self.assertEqual(cfg["batch_size"], m["default_batch_size"], m["name"])
            self.assertEqual(cfg["optimizer"]["name"], d["optimizer"]["name"], m["name"])
            self.assertEqual(cfg["optimizer"]["lr"], d["optimizer"]["lr"], m["name"])
            self.assertEqual(cfg["optimizer"]["weight_decay"], d["optimizer"]["weight_decay"], m["name"])
            self.assertEqual((cfg["warmup_steps"], cfg["dataset_size"], cfg["mode"]),
                             (d["warmup_steps"], d["dataset_size"], d["mode"]), m["name"])
            for key in ("seq_len", "num_labels", "latent_size", "image_size", "num_classes"):
                if key in d:
                    self.assertEqual(cfg[key], d[key], (m["name"], key))

    def test_a_changed_catalog_changes_the_reference_with_no_python_edit(self):
        catalog = pytorch_reference.gpubench_catalog()
        for m in catalog["models"]:
            if m["name"] == "llama":
                m["gpu_defaults"].update({"batch_size": 3, "seq_len": 512, "layers": 2, "hidden": 64, "heads": 4,
                                          "kv_heads": 2, "intermediate": 96})
                m["gpu_defaults"]["optimizer"]["lr"] = 0.125
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
            json.dump(catalog, f)
        cfg = pytorch_reference.parse_args(["--model", "llama", "--catalog", f.name])
        os.unlink(f.name)
        self.assertEqual((cfg["batch_size"], cfg["seq_len"], cfg["layers"], cfg["width"], cfg["kv_heads"]),
                         (3, 512, 2, 64, 2))
        self.assertEqual(cfg["optimizer"]["lr"], 0.125)

    def test_inference_mode_and_bad_modes(self):
        llama = pytorch_reference.parse_args(["--model", "llama", "--mode", "inference", "--precision", "fp16", "--graph"])
        self.assertEqual(llama["mode"], "inference")
        with self.assertRaises(SystemExit):
            pytorch_reference.parse_args(["--model", "gpt2", "--mode", "serve"])

    def test_generate_takes_gpubench_shapes_and_only_decoders(self):
        g = pytorch_reference.parse_args(["--model", "llama", "--mode", "generate", "--precision", "bf16"])
        self.assertEqual((g["batch_size"], g["prompt_tokens"], g["new_tokens"]), (1, 512, 128))
        g = pytorch_reference.parse_args(["--model", "gpt2", "--mode", "generate", "--batch-size", "32",
                                          "--prompt-tokens", "128", "--new-tokens", "64"])
        self.assertEqual((g["batch_size"], g["prompt_tokens"], g["new_tokens"]), (32, 128, 64))
        with self.assertRaises(SystemExit):
            pytorch_reference.parse_args(["--model", "resnet50", "--mode", "generate"])

    def test_static_cache_decoder_gives_generates_greedy_tokens(self):
        # --mode generate --graph's decode loop (gpt-fast's, over transformers' static cache), run eagerly on the CPU:
        # the tokens transformers' generate(do_sample=False) picks, for a reduced llama (grouped kv heads) and gpt2.
        try:
            import torch
            import transformers
        except ImportError:
            self.skipTest("no torch / transformers in this Python")
        torch.manual_seed(0)
        for config in (transformers.LlamaConfig(vocab_size=97, hidden_size=64, intermediate_size=96,
                                                num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                                                max_position_embeddings=128, tie_word_embeddings=False),
                       transformers.GPT2Config(n_layer=2, n_embd=64, n_head=4, vocab_size=97, n_positions=128,
                                               bos_token_id=0, eos_token_id=0)):
            model = transformers.AutoModelForCausalLM.from_config(config).eval()
            model.generation_config.eos_token_id = None
            model.generation_config.pad_token_id = 0
            prompt = torch.randint(0, 97, (2, 11))
            with torch.inference_mode():
                expected = model.generate(prompt, attention_mask=torch.ones_like(prompt), max_new_tokens=20,
                                          min_new_tokens=20, do_sample=False)[:, 11:]
            prefill, step, tokens = pytorch_reference.static_cache_decoder(model, prompt, 20)
            prefill()
            for _ in range(3):  # a warm-up, as before the graph's capture: the next prompt starts afresh
                step()
            prefill()
            for _ in range(19):
                step()
            self.assertTrue(torch.equal(tokens, expected), (config.model_type, tokens, expected))

    def test_leading_agreement_counts_the_new_tokens_every_sequence_shares(self):
        # --graph --compile's check of its tokens against the uncompiled forward's (tokens_agree_with_uncompiled).
        agree = pytorch_reference.leading_agreement
        self.assertEqual(agree([[1, 2, 3], [4, 5, 6]], [[1, 2, 3], [4, 5, 6]]), 3)
        self.assertEqual(agree([[1, 2, 3], [4, 5, 6]], [[1, 2, 9], [4, 5, 6]]), 2)
        self.assertEqual(agree([[1, 2, 3], [4, 5, 6]], [[1, 2, 3], [7, 5, 6]]), 0)

    def test_compile_caches_never_cross_autocast_dtypes(self):
        # torch 2.11's AOTAutograd cache reused an fp16 graph for a bf16 run (H200, 2026-12-02): one folder per dtype.
        bf16 = pytorch_reference.inductor_cache_dir("bfloat16", None, "/tmp/torchinductor_u")
        fp16 = pytorch_reference.inductor_cache_dir("float16", None, "/tmp/torchinductor_u")
        self.assertNotEqual(bf16, fp16)
        self.assertEqual(bf16, pytorch_reference.inductor_cache_dir("bfloat16", None, "/tmp/torchinductor_u"))
        self.assertEqual(pytorch_reference.inductor_cache_dir("float16", "/mine", "/tmp/torchinductor_u"), "/mine")

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
            "epochs": [{"seconds": 10.0, "step_times_ms": [30.0 + i % 7 for i in range(40)]},
                       {"seconds": 9.8, "step_times_ms": [29.5 + i % 5 for i in range(40)]}],
            "telemetry": {"trace_path": trace} if trace else {},
            "profile": {"categories": [{"category": "gemm_conv", "ms_per_step": 20.0 * batch / 64},
                                       {"category": "normalization", "ms_per_step": 9.0},
                                       {"category": "elementwise", "ms_per_step": 4.5}]} if batch >= 128 else None}


class BenchTest(unittest.TestCase):
    ROOT = os.path.join(os.path.dirname(__file__), "..", "..")

    def test_every_shipped_bench_is_a_valid_gpubench_scenario_with_a_plan(self):
        import subprocess
        files = sorted(glob.glob(os.path.join(self.ROOT, "configs", "bench", "*.yaml")))
        self.assertGreaterEqual(len(files), 5)
        with tempfile.TemporaryDirectory() as d:
            for f in files:
                b = bench.load_bench(f)
                steps = bench.plan(b, d, "gpubench", "python3")
                runs = [s for s in steps if s[3]]
                self.assertEqual(len(runs), b["rounds"] * (len(b["gpubench"]) + len(b["pytorch"])), f)
                # Alternating: every variant once per round, round 1 entirely before round 2.
                self.assertEqual([s[3][2] for s in runs], sorted(s[3][2] for s in runs), f)
                scenario = os.path.join(d, "scenarios", b["name"] + ".yaml")
                self.assertTrue(all(scenario in s[1] for s in runs), f)  # both tools read the one scenario file
            binary = os.environ.get("GPUBENCH_BINARY")
            if binary:
                r = subprocess.run([binary, "validate", *glob.glob(os.path.join(d, "scenarios", "*.yaml"))],
                                   capture_output=True, text=True)
                self.assertEqual(r.returncode, 0, r.stderr)

    def test_bad_bench_files_are_refused_naming_the_file(self):
        with tempfile.TemporaryDirectory() as d:
            for text, expect in (("scenario: {model: gpt2}\ngpubench: {eager: []}\nrounds: 2\nrepeat: 3\n", "repeat"),
                                 ("gpubench: {eager: []}\n", "scenario"),
                                 ("scenario: {model: gpt2}\n", "nothing to run")):
                f = os.path.join(d, "b.yaml")
                open(f, "w").write(text)
                with self.assertRaises(SystemExit) as e:
                    bench.load_bench(f)
                self.assertIn("b.yaml", str(e.exception))
                self.assertIn(expect, str(e.exception))

    def test_ratios_of_totals_and_medians_per_round(self):
        b = {"name": "x", "rounds": 2, "gpubench": {"eager": []}, "pytorch": {"eager": [], "compile": []}}
        r = lambda rate, med: {"rate": rate, "median_ms": med, "peak": None, "status": "ok"}
        records = {("gpubench", "eager", 1): r(200, 10), ("gpubench", "eager", 2): r(180, 11),
                   ("pytorch", "eager", 1): r(100, 20), ("pytorch", "eager", 2): r(100, 22),
                   ("pytorch", "compile", 1): r(400, 5), ("pytorch", "compile", 2): None}
        rows = bench.summarize(b, records)
        eager = next(x for x in rows if x.get("pytorch") == "eager" and "gpubench" in x)
        self.assertAlmostEqual(eager["ratio_of_totals"]["mean"], 1.9)
        self.assertAlmostEqual(eager["ratio_of_medians"]["min"], 2.0)
        compile_ = next(x for x in rows if x.get("pytorch") == "compile" and "gpubench" in x)
        self.assertEqual(compile_["ratio_of_totals"]["n"], 1)  # the missing round is not a ratio
        self.assertAlmostEqual(compile_["ratio_of_totals"]["mean"], 0.5)
        self.assertIn("| x | eager | compile | 0.500", bench.markdown(rows))


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
            json.dump({"threshold": 0.02,
                       "comparisons": [{"label": "a", "ratio": 0.95, "ci_low": 0.94, "ci_high": 0.96,
                                        "verdict": "regression"},
                                       {"label": "b", "ratio": 1.0025, "ci_low": 0.99, "ci_high": 1.015,
                                        "verdict": "no significant change"}]}, open(cmp, "w"))
            groups = os.path.join(d, "groups.json")  # as `gpubench report` writes it: the three are one sweep
            json.dump({"sweeps": [paths]}, open(groups, "w"))
            out = os.path.join(d, "out")
            self.assertEqual(plot_results.main(["--out", out, "--compare", cmp, "--groups", groups] + paths), 0)
            names = ("throughput.png", "step_time.png", "epoch_time.png", "telemetry.png", "batch_size.png",
                     "compare.png", "profile.png")
            for name in names:
                with open(os.path.join(out, name), "rb") as f:
                    data = f.read()
                self.assertTrue(data.startswith(b"\x89PNG"), name)
                self.assertGreater(len(data), 5000, name)
            # charts.json: each chart's labels as drawn, none twice in one chart.
            with open(os.path.join(out, "charts.json")) as f:
                labels = json.load(f)
            self.assertEqual(set(labels), set(names))
            for name, ls in labels.items():
                self.assertTrue(ls, name)
                self.assertEqual(len(ls), len(set(ls)), f"{name}: {ls}")
            self.assertEqual(labels["compare.png"], ["a", "b"])
            self.assertEqual(len(labels["throughput.png"]), 3)  # one bar per scenario (here: per batch size)

    def test_scenarios_from_gpubench_are_drawn_with_their_intervals_one_panel_per_unit(self):
        with tempfile.TemporaryDirectory() as d:
            a, b = os.path.join(d, "a.json"), os.path.join(d, "b.json")
            json.dump(record(256, 4800), open(a, "w"))
            g = record(8, 200)
            g["scenario"]["model"], g["model"]["sample_unit"] = "gpt2", "sequences"
            json.dump(g, open(b, "w"))
            groups = os.path.join(d, "groups.json")
            json.dump({"sweeps": [], "scenarios": [
                {"label": "resnet50 bs256, NVIDIA H200", "model": "resnet50", "mode": "train", "unit": "images/s",
                 "device_model": "NVIDIA H200", "n": 3, "mean": 4850.0, "half_width_95": 124.2,
                 "values": [4800, 4850, 4900], "paths": [a], "ok_paths": [a]},
                {"label": "gpt2 bs8, NVIDIA H200", "model": "gpt2", "mode": "train", "unit": "sequences/s",
                 "device_model": "NVIDIA H200", "n": 1, "mean": 200.0, "half_width_95": None, "values": [200.0],
                 "paths": [b], "ok_paths": [b]}]}, open(groups, "w"))
            out = os.path.join(d, "out")
            self.assertEqual(plot_results.main(["--out", out, "--groups", groups, a, b]), 0)
            with open(os.path.join(out, "charts.json")) as f:
                labels = json.load(f)
            # One GPU model: it goes into the panel titles, not onto every label.
            self.assertEqual(sorted(labels["throughput.png"]), ["gpt2 bs8", "resnet50 bs256"])

    def test_records_without_data_draw_nothing_rather_than_fail(self):
        with tempfile.TemporaryDirectory() as d:
            p = os.path.join(d, "failed.json")
            r = record(64, 0.0)
            r["status"] = "oom"
            json.dump(r, open(p, "w"))
            self.assertEqual(plot_results.plot_all(plot_results.load_records([p]), d), [])


class ReportBinaryTest(unittest.TestCase):
    """A gpubench copied away from its build and source trees still draws the report's charts, or says why not."""

    def setUp(self):
        self.binary = os.environ.get("GPUBENCH_BINARY")
        if not self.binary:
            self.skipTest("GPUBENCH_BINARY names the gpubench to test")
        self.records = os.path.join(os.path.dirname(__file__), "..", "fixtures", "records", "llm-inference",
                                    "2-llm-inference")

    def report(self, d, env=None):
        import shutil
        copied = os.path.join(d, "bin", "gpubench")
        os.makedirs(os.path.dirname(copied), exist_ok=True)
        shutil.copy(self.binary, copied)
        run_env = dict(os.environ, **(env or {}))
        run_env.pop("GPUBENCH_PLOT_SCRIPT", None)
        r = subprocess.run([copied, "report", os.path.abspath(self.records), "-o", os.path.join(d, "out"),
                            "--format", "json"], capture_output=True, text=True, cwd=d, env=run_env, timeout=300)
        self.assertEqual(r.returncode, 0, r.stderr[-2000:])
        return json.loads(r.stdout)

    def test_a_copied_binary_draws_the_charts(self):
        with tempfile.TemporaryDirectory() as d:
            done = self.report(d, {"GPUBENCH_PLOT_PYTHON": sys.executable})
            self.assertEqual(done["chart_note"], "")
            self.assertIn("throughput.png", done["charts"])
            with open(os.path.join(d, "out", "report.html")) as f:
                self.assertIn('data-chart="throughput.png"', f.read())

    def test_without_python_or_matplotlib_the_report_says_why(self):
        with tempfile.TemporaryDirectory() as d:
            done = self.report(d, {"GPUBENCH_PLOT_PYTHON": os.path.join(d, "no-such-python3")})
            self.assertEqual(done["charts"], [])
            self.assertIn("no Python interpreter", done["chart_note"])
            with open(os.path.join(d, "out", "report.html")) as f:
                self.assertIn("No charts: no Python interpreter", f.read())
        with tempfile.TemporaryDirectory() as d:
            fake = os.path.join(d, "python3")  # a python3 whose import of matplotlib fails
            with open(fake, "w") as f:
                f.write("#!/bin/sh\nexec %s -S -I -c 'import sys; sys.modules[\"matplotlib\"] = None; "
                        "sys.argv = sys.argv[1:]; exec(open(sys.argv[0]).read())' \"$@\"\n" % sys.executable)
            os.chmod(fake, 0o755)
            done = self.report(d, {"GPUBENCH_PLOT_PYTHON": fake})
            self.assertEqual(done["charts"], [])
            self.assertIn("has no matplotlib", done["chart_note"])


class ExportTest(unittest.TestCase):
    """`gpubench export` of committed H200 records groups correctly in pandas by its identity columns."""

    def test_a_groupby_on_the_identity_columns_gives_one_line_per_scenario(self):
        try:
            import pandas as pd
        except ImportError:
            self.fail("python3-pandas is needed (scripts/bootstrap.sh installs it)")
        root = os.path.join(os.path.dirname(__file__), "..", "fixtures", "records")
        folders = [os.path.join(root, "aa-noise"), os.path.join(root, "ddp-scaling")]
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "runs.csv")
            subprocess.run([os.environ["GPUBENCH_BINARY"], "export", *folders, "--per", "run", "--out", out, "-q"],
                           check=True)
            df = pd.read_csv(out)
        self.assertEqual(len(df), 38)  # 36 A/A records, the 1- and 2-GPU runs
        # The identity columns, each one value per scenario: what a throughput-vs-batch plot must not join.
        identity = ["model", "mode", "batch_size", "precision_requested", "precision", "world_size", "execution_mode",
                    "kernels", "data", "data_only", "dataset_size", "device_model", "throughput_unit"]
        by_id = df.groupby("scenario_id")
        self.assertEqual(by_id.ngroups, df.groupby(identity, dropna=False).ngroups)
        self.assertTrue((by_id[identity].nunique(dropna=False) == 1).all().all())
        self.assertEqual(by_id.ngroups, 8)  # six A/A scenarios (their paired rounds among them), 1 and 2 GPUs
        gpus = df[df["model"] == "resnet50"].groupby("world_size")["scenario_id"].unique()
        self.assertFalse(set(gpus[1]) & set(gpus[2]), "1-GPU and 2-GPU runs are different scenarios")
        gpt2 = df[df["model"] == "gpt2"].groupby("mode")["scenario_id"].nunique()
        self.assertEqual(set(gpt2.index), {"train", "inference"})
        self.assertEqual(set(df[df["model"] == "gpt2"]["throughput_unit"]), {"sequences/s"})
        self.assertIn("amp", set(df["precision_requested"]))  # `amp` asked, fp16 run: both are columns
        self.assertIn("fp16", set(df["precision"]))

class FormatCheckTest(unittest.TestCase):
    """scripts/check_format.sh on a repository of its own: lines changed since the base must be clang-format's."""

    def setUp(self):
        if not shutil.which("git-clang-format") or not shutil.which("clang-format"):
            self.skipTest("no git-clang-format here (Debian: clang-format)")
        self.repo = tempfile.mkdtemp()
        self.git("init", "-q")
        with open(os.path.join(self.repo, ".clang-format"), "w") as f:
            f.write("BasedOnStyle: Google\nColumnLimit: 120\n")
        os.makedirs(os.path.join(self.repo, "src"))
        self.write("int   old( ) {return 1;}\n")  # before the base: never asked about
        self.base = self.commit("base")

    def tearDown(self):
        if hasattr(self, "repo"):
            shutil.rmtree(self.repo, ignore_errors=True)

    def git(self, *args):
        return subprocess.run(["git", "-C", self.repo, "-c", "user.name=t", "-c", "user.email=t@t", *args],
                              check=True, capture_output=True, text=True).stdout.strip()

    def write(self, text):
        with open(os.path.join(self.repo, "src", "a.cpp"), "w") as f:
            f.write(text)

    def commit(self, message):
        self.git("add", "-A")
        self.git("commit", "-q", "-m", message)
        return self.git("rev-parse", "HEAD")

    def check(self):
        script = os.path.join(os.path.dirname(__file__), "..", "..", "scripts", "check_format.sh")
        return subprocess.run(["bash", script, self.base], capture_output=True, text=True,
                              env={**os.environ, "GPUBENCH_FORMAT_REPO": self.repo})

    def test_an_unformatted_new_line_fails_with_the_diff_and_the_fix(self):
        self.write("int   old( ) {return 1;}\nint   g( ) {return 2;}\n")
        self.commit("bad")
        r = self.check()
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("+int g() { return 2; }", r.stdout)
        self.assertIn("git clang-format " + self.base, r.stderr)

    def test_formatted_new_lines_pass_and_old_lines_are_left_alone(self):
        self.write("int   old( ) {return 1;}\nint g() { return 2; }\n")
        self.commit("good")
        r = self.check()
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)


if __name__ == "__main__":
    unittest.main()
