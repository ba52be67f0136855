"""The results store in PostgreSQL, end to end through the binary, against the real server ctest starts
(tests/scripts/postgres_server.sh; its settings in $GPUBENCH_TEST_POSTGRES_ENV): every store command answers as it
does with a SQLite file; eight `db add` processes at once lose and duplicate nothing; a server lost in the middle of
`db add` leaves no half-written run and a clear error (exit 4); a wrong password or an unreachable server is exit 2
naming the host and never the password; reading commands never create tables. Needs $GPUBENCH_BINARY."""
import copy
import glob
import json
import os
import re
import subprocess
import tempfile
import time
import unittest

from prometheus_client.openmetrics.parser import text_string_to_metric_families as parse_openmetrics

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")
BINARY = os.environ["GPUBENCH_BINARY"]
SERVER_SCRIPT = os.path.join(HERE, "postgres_server.sh")
FIXTURES = os.path.join(ROOT, "tests", "fixtures", "records", "aa-noise")


def read_env(path):
    env = {}
    with open(path) as f:
        for line in f:
            key, _, value = line.strip().partition("=")
            if key:
                env[key] = value
    return env


def gpubench(*args, env=None):
    p = subprocess.run([BINARY, *args], capture_output=True, text=True, timeout=600,
                       env={**os.environ, **(env or {})})
    return p.returncode, p.stdout, p.stderr


class Server:
    """One PostgreSQL server: databases made and read through psql over its Unix socket as the superuser."""

    def __init__(self, env):
        self.env = env
        self.socket, self.port = env["GPUBENCH_PG_SOCKET"], env["GPUBENCH_PG_PORT"]
        self.password = env["GPUBENCH_PG_PASSWORD"]
        self.psql_bin = os.path.join(env["GPUBENCH_PG_BIN"], "psql")

    def psql(self, sql, database="postgres"):
        p = subprocess.run([self.psql_bin, "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-h", self.socket, "-p",
                            self.port, "-U", "postgres", "-d", database, "-c", sql],
                           capture_output=True, text=True, timeout=120)
        if p.returncode != 0:
            raise RuntimeError(p.stderr)
        return p.stdout.strip()

    def new_database(self, name):
        self.psql(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        self.psql(f"CREATE DATABASE {name} OWNER gpubench")
        return name

    def socket_url(self, database):
        return f"postgresql://gpubench@/{database}?host={self.socket}&port={self.port}"

    def tcp_url(self, database, password=None):
        secret = f":{password}" if password else ""
        return f"postgresql://gpubench{secret}@127.0.0.1:{self.port}/{database}"

    def tables(self, database):
        return int(self.psql("SELECT COUNT(*) FROM pg_tables WHERE schemaname = 'public'", database))


def write_records(folder, count, salt, template=None):
    """`count` distinct records (one fixture's, each with its own seed and start time)."""
    os.makedirs(folder, exist_ok=True)
    with open(template or os.path.join(FIXTURES, "resnet_amp_bs64_r1.json")) as f:
        base = json.load(f)
    for i in range(count):
        r = copy.deepcopy(base)
        r["scenario"]["seed"] = salt * 100000 + i
        r["environment"]["start_time_utc"] = f"2026-11-{1 + i % 28:02d}T{(salt + i) % 24:02d}:{i % 60:02d}:00Z"
        with open(os.path.join(folder, f"r{salt}_{i:04d}.json"), "w") as f:
            json.dump(r, f)


class PostgresStoreTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        env_file = os.environ.get("GPUBENCH_TEST_POSTGRES_ENV", "")
        if not os.path.exists(env_file):
            raise unittest.SkipTest("no test PostgreSQL server (ctest starts one: tests/scripts/postgres_server.sh)")
        cls.server = Server(read_env(env_file))
        rc, _, err = gpubench("history", cls.server.socket_url("postgres"))
        if "built without libpq" in err:
            raise unittest.SkipTest("built without libpq")

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name
        self.db = self.server.new_database("cli_" + re.sub(r"\W", "_", self._testMethodName)[5:40].lower())

    def tearDown(self):
        self.server.psql(f"DROP DATABASE IF EXISTS {self.db} WITH (FORCE)")
        self.tmp.cleanup()

    def test_every_store_command_answers_as_it_does_with_a_sqlite_file(self):
        url = self.server.socket_url(self.db)
        sqlite = os.path.join(self.dir, "results.db")
        candidate = os.path.join(FIXTURES, "resnet_amp_bs64_r5.json")

        def both(*args, expect=0):
            """The command on each store; their outputs with the store's name made the same."""
            answers = []
            for store in (sqlite, url):
                words = [w.replace("STORE", store) for w in args]
                rc, out, err = gpubench(*words)
                self.assertEqual(rc, expect, f"{words}: {err}")
                answers.append(out.replace(store, "STORE"))
            self.assertEqual(answers[0], answers[1], args)
            return answers[1]

        added = both("db", "add", "STORE", FIXTURES, "--format", "json")
        self.assertEqual(json.loads(added)["added"], 36)
        both("db", "add", "STORE", FIXTURES)  # again: all already stored
        self.assertEqual(int(self.server.psql("SELECT COUNT(*) FROM runs", self.db)), 36)
        csv = both("history", "STORE", "--format", "csv")
        self.assertEqual(csv.count("\n"), 37)
        both("history", "STORE", "--model", "bert-base", "--scenario", "batch_size=128", "--format", "csv")
        # A boolean and a nested key: SQLite's json_extract and PostgreSQL's #>> must pick the same 13 runs.
        picked = both("history", "STORE", "--scenario", "cudnn_benchmark=true", "--scenario", "optimizer.name=sgd",
                      "--metric", "step_time_median_ms", "--format", "csv")
        self.assertEqual(picked.count("\n"), 14)
        both("history", "STORE", "--scenario", "cudnn_benchmark=false", "--format", "csv")
        both("history", "STORE", "--since", "2026-12-01T12:00:00Z", "--format", "csv")
        both("history", "STORE", "--model", "resnet50", "--detect", expect=7)  # too few runs a series: said so
        both("export", "STORE", "--per", "run", "--format", "csv")
        both("compare", "db:STORE", candidate, "--format", "json")
        both("compare", "db:STORE:last-2", candidate)
        both("db", "list", "STORE", "--status", "ok", "--format", "csv")
        both("db", "rm", "STORE", "1", "2", "--dry-run", "--format", "json")
        both("db", "prune", "STORE", "--keep", "2", "--dry-run", "--format", "json")
        for store in (sqlite, url):
            out = os.path.join(self.dir, "report-" + ("sqlite" if store == sqlite else "pg"))
            rc, _, err = gpubench("report", FIXTURES, "--db", store, "--out", out)
            self.assertEqual(rc, 0, err)
            self.assertTrue(os.path.exists(os.path.join(out, "report.html")))
        om = {f.name: f for f in parse_openmetrics(gpubench("history", url, "--format", "openmetrics")[1])}
        self.assertEqual(len(om["gpubench_samples_per_s"].samples), 36)
        # Writes: rm and prune remove the same runs; a run's record goes in with `run --db`.
        both("db", "prune", "STORE", "--keep", "3", "--format", "json")
        both("db", "rm", "STORE", "3", "--format", "json")
        rc, _, err = gpubench("run", "--config", os.path.join(ROOT, "tests", "data", "tiny_resnet.yaml"), "--epochs",
                              "1", "--dataset-size", "4", "--out", os.path.join(self.dir, "run.json"), "--db", url)
        self.assertEqual(rc, 0, err)
        rc, out, err = gpubench("history", url, "--model", "resnet50", "--scenario", "batch_size=4", "--format", "csv")
        self.assertEqual(rc, 0, err)
        self.assertEqual(out.count("\n"), 2, out)

    def test_history_of_a_postgresql_store_is_openmetrics_a_real_parser_reads_with_labels_escaped(self):
        url = self.server.socket_url(self.db)
        hostile = 'rack "7"\\slot\nB'  # a double quote, a backslash and a newline
        records = os.path.join(self.dir, "records")
        write_records(records, 2, 9)
        with open(os.path.join(records, "r9_0001.json")) as f:
            r = json.load(f)
        r["environment"]["hostname"] = hostile
        r["environment"]["device_name"] = hostile
        with open(os.path.join(records, "r9_0001.json"), "w") as f:
            json.dump(r, f)
        rc, _, err = gpubench("db", "add", url, records)
        self.assertEqual(rc, 0, err)
        rc, out, err = gpubench("history", url, "--format", "openmetrics")
        self.assertEqual(rc, 0, err)
        self.assertTrue(out.endswith("# EOF\n"))
        samples = {f.name: f for f in parse_openmetrics(out)}["gpubench_samples_per_s"].samples
        self.assertEqual(len(samples), 2)
        self.assertEqual({s.labels["run_id"] for s in samples}, {"1", "2"})
        self.assertIn(hostile, {s.labels["device_model"] for s in samples})

    def test_eight_db_add_processes_at_once_lose_and_duplicate_nothing(self):
        url = self.server.socket_url(self.db)
        folders = []
        for w in range(8):
            folder = os.path.join(self.dir, f"w{w}")
            write_records(folder, 50, w)
            folders.append(folder)
        # Each writer also adds 10 of its neighbour's records: stored once, whoever comes first.
        for w in range(8):
            for name in sorted(os.listdir(folders[(w + 1) % 8]))[:10]:
                with open(os.path.join(folders[(w + 1) % 8], name)) as src, \
                        open(os.path.join(folders[w], "n_" + name), "w") as dst:
                    dst.write(src.read())
        procs = [subprocess.Popen([BINARY, "db", "add", url, f, "--format", "json"], stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True) for f in folders]
        added = 0
        for p in procs:
            out, err = p.communicate(timeout=600)
            self.assertEqual(p.returncode, 0, err)
            added += json.loads(out)["added"]
        self.assertEqual(added, 400)
        self.assertEqual(self.server.psql("SELECT COUNT(*), COUNT(DISTINCT fingerprint) FROM runs", self.db), "400|400")
        per_run = self.server.psql("SELECT COUNT(DISTINCT n) FROM (SELECT COUNT(*) AS n FROM metrics GROUP BY run_id) m",
                                   self.db)
        self.assertEqual(per_run, "1")  # every run has all its metrics (the records differ only in seed and date)

    def test_a_server_lost_in_the_middle_of_db_add_leaves_no_half_written_run(self):
        env_file = os.path.join(self.dir, "private.env")
        subprocess.run([SERVER_SCRIPT, "start", env_file], check=True, timeout=120)
        try:
            private = Server(read_env(env_file))
            db = private.new_database("lost")
            records = os.path.join(self.dir, "many")
            write_records(records, 1500, 1)
            url = private.tcp_url(db, private.password)
            p = subprocess.Popen([BINARY, "db", "add", url, records], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                 text=True)
            deadline = time.time() + 120
            while time.time() < deadline:
                time.sleep(0.05)
                try:
                    if int(private.psql("SELECT COUNT(*) FROM runs", db) or 0) >= 30:
                        break
                except (RuntimeError, ValueError):
                    pass  # the tables are not there yet
            subprocess.run([SERVER_SCRIPT, "kill", env_file], check=True, timeout=120)
            out, err = p.communicate(timeout=120)
            self.assertEqual(p.returncode, 4, err)  # the work started; the store is not where it was asked to be
            self.assertIn(f"127.0.0.1:{private.port}/{db}", err)
            self.assertIn("record(s) added before it", err)
            self.assertNotIn(private.password, out + err)
            subprocess.run([SERVER_SCRIPT, "restart", env_file], check=True, timeout=120)
            stored = int(private.psql("SELECT COUNT(*) FROM runs", db))
            self.assertGreaterEqual(stored, 30)
            self.assertLess(stored, 1500)
            # Whole runs only: every stored run has as many metrics as every other, none has none.
            self.assertEqual(private.psql("SELECT COUNT(*) FROM runs r WHERE NOT EXISTS "
                                          "(SELECT 1 FROM metrics m WHERE m.run_id = r.id)", db), "0")
            self.assertEqual(private.psql("SELECT COUNT(DISTINCT n) FROM (SELECT COUNT(*) AS n FROM metrics "
                                          "GROUP BY run_id) m", db), "1")
            # Running it again adds the rest.
            rc, out, err = gpubench("db", "add", url, records, "--format", "json")
            self.assertEqual(rc, 0, err)
            self.assertEqual(json.loads(out)["added"], 1500 - stored)
            self.assertEqual(int(private.psql("SELECT COUNT(*) FROM runs", db)), 1500)
        finally:
            subprocess.run([SERVER_SCRIPT, "stop", env_file], timeout=120)

    def test_wrong_credentials_or_no_server_are_exit_2_naming_the_host_never_the_password(self):
        s = self.server
        rec = os.path.join(FIXTURES, "resnet_amp_bs64_r1.json")
        wrong = "wrong-" + s.password
        cases = [
            (("history", s.tcp_url(self.db, wrong)), {}),
            (("db", "add", s.tcp_url(self.db), rec), {"PGPASSWORD": wrong}),
            (("export", f"postgresql://gpubench:{wrong}@127.0.0.1:1/{self.db}"), {}),  # nobody listens on port 1
            (("compare", f"db:{s.tcp_url(self.db, wrong)}", rec), {}),
        ]
        for args, env in cases:
            rc, out, err = gpubench(*args, env=env)
            self.assertEqual(rc, 2, (args, err))
            self.assertIn("127.0.0.1", err)
            self.assertNotIn(wrong, out + err)
        # The right password from ~/.pgpass's format (PGPASSFILE) or PGPASSWORD works; the URL's is never shown.
        pgpass = os.path.join(self.dir, "pgpass")
        with open(pgpass, "w") as f:
            f.write(f"127.0.0.1:{s.port}:{self.db}:gpubench:{s.password}\n")
        os.chmod(pgpass, 0o600)
        rc, out, err = gpubench("db", "add", s.tcp_url(self.db), rec, env={"PGPASSFILE": pgpass})
        self.assertEqual(rc, 0, err)
        record = os.path.join(self.dir, "run.json")
        rc, out, err = gpubench("run", "--config", os.path.join(ROOT, "tests", "data", "tiny_resnet.yaml"), "--epochs",
                                "1", "--dataset-size", "4", "--out", record, "--db", s.tcp_url(self.db, s.password))
        self.assertEqual(rc, 0, err)
        self.assertNotIn(s.password, out + err)
        with open(record) as f:
            text = f.read()
        self.assertNotIn(s.password, text)
        self.assertIn(f"--db {s.tcp_url(self.db)}", json.loads(text)["environment"]["command_line"])
        stored = s.psql("SELECT string_agg(record_json || source || environment_json, '') FROM runs", self.db)
        self.assertNotIn(s.password, stored)

    def test_a_password_is_never_shown_however_it_is_spelled(self):
        # A role whose password has a space, a '%' that is no escape, an '@' and a '/': spelled raw (ambiguous or
        # broken: refused), percent-encoded (works), as a query parameter whose name is percent-encoded, under a
        # capitalised scheme, wrong. No spelling of it reaches the console, a record or the store, on success or not.
        s = self.server
        secret = "s3 cr%t@x/y"
        s.psql(f"DROP ROLE IF EXISTS hostile_{self.db}")
        s.psql(f"CREATE ROLE hostile_{self.db} LOGIN PASSWORD '{secret}'")
        s.psql(f"GRANT ALL ON DATABASE {self.db} TO hostile_{self.db}")
        s.psql(f"GRANT ALL ON SCHEMA public TO hostile_{self.db}", self.db)
        user, host = f"hostile_{self.db}", f"127.0.0.1:{s.port}"
        encoded = "s3%20cr%25t%40x%2Fy"
        shown = [secret, encoded, "s3 cr", "cr%t", "x/y", "s3%20cr", "%25t%40"]
        rec = os.path.join(FIXTURES, "resnet_amp_bs64_r1.json")
        good = [f"postgresql://{user}:{encoded}@{host}/{self.db}",
                f"postgresql://{user}@{host}/{self.db}?pass%77ord={encoded}",
                f"POSTGRESQL://{user}:{encoded}@{host}/{self.db}?sslmode=disable"]
        bad = [f"postgresql://{user}:{secret}@{host}/{self.db}",            # raw: '@' and '/' after the credentials
               f"postgresql://{user}:s3 cr%t@{host}/{self.db}",             # raw '%t': not an escape
               f"postgresql://{user}@{host}/{self.db}?password=s3 cr%t",    # the same, as a query parameter
               f"postgresql://{user}:wrong%20{encoded}@{host}/{self.db}",    # wrong, spelled with a space
               f"postgresql://{user}@{host}/{self.db}?pass%77ord=wrong%20{encoded}"]
        try:
            for url in good:
                rc, out, err = gpubench("db", "add", url, rec)
                self.assertEqual(rc, 0, (url, err))
                for text in shown:
                    self.assertNotIn(text, out + err, url)
                rc, out, err = gpubench("history", url, "--format", "json")
                self.assertEqual(rc, 0, (url, err))
                for text in shown:
                    self.assertNotIn(text, out + err, url)
            for url in bad:
                for args in (("db", "add", url, rec), ("history", url), ("compare", f"db:{url}", rec)):
                    rc, out, err = gpubench(*args)
                    self.assertEqual(rc, 2, (args, err))
                    self.assertEqual(len(err.strip().splitlines()), 1, err)
                    for text in shown:
                        self.assertNotIn(text, out + err, args)
            record = os.path.join(self.dir, "run.json")
            rc, out, err = gpubench("run", "--config", os.path.join(ROOT, "tests", "data", "tiny_resnet.yaml"),
                                    "--epochs", "1", "--dataset-size", "4", "--out", record, "--db", good[0])
            self.assertEqual(rc, 0, err)
            with open(record) as f:
                text = f.read()
            stored = s.psql("SELECT string_agg(record_json || source || environment_json, '') FROM runs", self.db)
            for t in shown:
                self.assertNotIn(t, out + err + text + stored)
        finally:
            s.psql(f"DROP DATABASE IF EXISTS {self.db} WITH (FORCE)")
            s.psql(f"DROP ROLE IF EXISTS hostile_{self.db}")

    def test_reading_commands_never_create_tables(self):
        url = self.server.socket_url(self.db)
        rec = os.path.join(FIXTURES, "resnet_amp_bs64_r1.json")
        for args in (("history", url), ("history", url, "--detect"), ("export", url), ("db", "list", url),
                     ("db", "rm", url, "1", "--dry-run"), ("db", "prune", url, "--keep", "1", "--dry-run"),
                     ("compare", f"db:{url}", rec), ("report", rec, "--db", url, "--out", os.path.join(self.dir, "r"))):
            rc, _, err = gpubench(*args)
            self.assertEqual(rc, 2, (args, err))
            self.assertIn("no gpubench results store here yet", err)
        self.assertEqual(self.server.tables(self.db), 0)


if __name__ == "__main__":
    unittest.main()
