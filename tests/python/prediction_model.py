"""The configuration and "model" the PredictionWriter tests share with their distributed
worker (tests/python/prediction_worker.py)."""

INPUT_DIMS = {"lat": 8, "lon": 8}
INPUT_OVERLAP = {"lat": 3, "lon": 4}
VARIABLES = ["a", "b"]
OUTPUTS = {"pa": ("lat", "lon"), "pb": ("lat", "lon")}
BATCH = 3
SEED = 11


def model(x):
    """A deterministic stand-in for a network: 2x + 1 per channel (exact in float32 for the
    test's values, so that sums of overlapping windows do not depend on their order)."""
    return x * 2 + 1
