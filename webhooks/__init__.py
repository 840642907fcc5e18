"""Outbound webhooks (CONTRACT section 17): endpoints with signing secrets, a delivery per
matching processed event, signed as Standard Webhooks 1.0 and sent on the work-queue kit."""
