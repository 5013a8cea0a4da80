"""How far the time model is off on every committed H200 measurement, with the built-in and the calibrated model (no GPU)."""
