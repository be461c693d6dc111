"""The evidence protocol: the freeze manifest, sealed runs, the one-time holdout, gates.

Enters: the bundle's frozen files and finished runs. Leaves: freeze.json, seal.json, the
holdout ledger and gate results; refusals when something drifted or is sealed.
"""
