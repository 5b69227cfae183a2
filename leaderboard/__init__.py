"""Statistics, comparison and ranking of nodes, regions and providers; the web pages."""
