"""`tickwheel bench`: Tickwheel's scenarios and the same workloads on its peers, measured
on this machine. Benchmarks print figures; nothing here passes or fails by the clock."""
