"""vmap's batched path: BatchedTensor (batched.py) and the batching rules (rules.py)."""
