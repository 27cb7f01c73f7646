"""select: the one place where policy turns stored scores into keep/drop decisions.

Upstream stages store values (language, confidence and script share, duplicate structure,
line counts, heuristic metrics, classifier scores, PII spans, toxicity); policy from config
turns them into decisions in two steps, so that changing it reruns these steps and what
follows them, never extraction, language identification, deduplication or scoring:

- `judge` (per part) reads a part's documents and every side-car file and evaluates every
  rule except the choice among duplicates: per document, the first rule it fails, whether it
  is a cross-snapshot duplicate, which boilerplate lines it drops, which PII spans are
  replaced when its text is emitted, and what the choice ranks by.
- `select` (per snapshot: an exact group or a near-duplicate cluster spans the parts of its
  snapshot) keeps the best member of each exact group and each near-duplicate cluster, so
  that a cluster is lost only when every member fails a rule, and writes, for every document,
  whether it is selected and the first rule that excluded it.

The checks run in pipeline order, and the yield report attributes each exclusion to the
stage of its reason (`reason_stage`).
"""
