"""Every figure derived from results: node rows, links, clusters, stability, estimate, score."""
