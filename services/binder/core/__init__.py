"""The binder's pure core: the ledger, plan verification, node liveness, and the Core that ties them."""
