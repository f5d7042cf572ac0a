"""The benchmarks distribution (its package is src/voxflow_bench); a package only so that its
tests import as ``benchmarks.tests`` beside the product's ``tests``."""
