"""extract: HTML and JSONL records to documents, one part per job (part.py), in sandboxed workers."""
