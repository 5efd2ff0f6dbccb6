"""Online experiments: the use cases of ``online report``, the live arms of ``serve`` and the traffic
pool of ``tasks create --from-traffic``. The pure kernels they call live in :mod:`ndcg_labeling.online`."""
