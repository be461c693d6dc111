"""``obai-demo serve``: a local web chat over the same hub, one traced turn per question."""
