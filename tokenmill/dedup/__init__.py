"""Deduplication: exact, line-level and MinHash-LSH near-duplicates.

Nothing is deleted here. The `score` job hashes every document of a part (`minhash.signature_rows`);
`minhash_cluster` (one MPI job over the corpus) groups exact copies, clusters
near-duplicates and counts in how many clusters each line appears, and writes the
results as attribute columns. `select` turns them into decisions.
"""
