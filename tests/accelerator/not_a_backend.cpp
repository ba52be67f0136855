// A shared library that loads cleanly but registers no LibTorch backend: `--backend-library` must say so.
extern "C" int gpubench_not_a_backend(int x) { return x + 1; }
