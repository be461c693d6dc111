"""Installing the skill bundle into another repository (``obai-e2e install``)."""
