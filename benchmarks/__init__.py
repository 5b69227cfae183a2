"""What runs on a host: the probes (benchmarks.probes), their command runner, the pure
parsers of the standard tools' output, and the statistics of repeated measurements. What a
run may ask and a result may say is the contract (contract/)."""
