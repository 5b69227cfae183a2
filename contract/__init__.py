"""The contract between the platform and a host, shared by both and free of Django.

What a run asks for (suites, profiles and their bounded parameters, the run spec a claim
returns, the task name on the node's queue), what a result may say (the metric table, the
link classes its figures are judged in, the published GPU peaks), how both sides schedule a
job's link tests, sample statistics, the iperf3 server log's parser, and the canonical JSON
that certificates are signed over. The platform (jobs, board, certification, web) and the
host agent (workers, benchmarks) import from here and from nowhere on the other side.
"""
