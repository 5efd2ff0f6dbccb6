"""Online experiments (kernels): served lists rebuilt per request, each scored with a registry metric;
sufficient statistics per (arm, window, query type) in fixed point, so that merging is exact; arm
statistics (cluster bootstrap, cluster-robust differences) and the Kendall tau of offline-online
agreement. Arrays in, arrays out: no database, no pandas (their use case is experiments/report.py)."""
