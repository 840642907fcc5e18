"""The work-queue kit: a table whose rows are units of work, drained by Celery workers.

Every family that retries (events, email and push deliveries, campaign fan-out, automation
runs, import batches) keeps its work on its own rows and uses this kit:

- `models.WorkItem`: the columns (status, attempts, next_attempt_at, claim_token,
  lease_expires_at, last_error, error_code) and the indexes the claim needs.
- `queue.WorkQueue`: claim (`FOR UPDATE SKIP LOCKED`, a token and a lease; expired leases
  are taken over), run a claimed batch in one transaction, record success in bulk and
  failure per row (permanent errors dead-letter at once, transient ones retry with
  backoff until the attempts run out), requeue from the dead-letter queue, and drain;
  its claim statement is `claiming`'s, its outcome writes are `recording`'s, and a batch
  whose transaction fails at its commit is handed back at once by `committing` (each
  row a failed attempt, retried with backoff or dead-lettered, not left to its lease).
- `work.BatchWork`: what a family does with a claimed batch (`PerItem` values for the
  done rows, and the `BatchOutcome` of a batch).
- `policy.RetryPolicy`: exponential backoff with equal jitter and a cap, overridable per
  owner (a project).
- `errors.WorkError`: the error base with a `permanent` flag.
- `wake`: the debounced wake-up, published by task name.

The kit imports no app: a family hands it its model, its task name and its tunables.
"""
