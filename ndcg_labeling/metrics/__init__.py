"""Pure metric kernels (filled in by the metrics work)."""
