"""Writes of the webhooks family: endpoints (`endpoints`), the deliveries a processed batch
of events makes (`fanout`), sending them (`delivery`, `outcomes`) and replays (`replay`)."""
