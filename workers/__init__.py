"""What a GPU host runs: the node worker, the benchctl CLI, host inventory. No Django."""
