"""Shapes of the Segment-compatible endpoints, for the OpenAPI document: the views read
bodies with tracking.messages, which takes every member Segment's clients send."""

from typing import Any

from rest_framework import serializers

from tracking.messages import CALLS


class SegmentMessageSerializer(serializers.Serializer[Any]):
    """A Segment message (HTTP Tracking API). Members not listed here (`integrations`,
    `_metadata`, `writeKey`, ...) are accepted and ignored."""

    type = serializers.ChoiceField(
        choices=list(CALLS), required=False, help_text="Required in a batch; the path's call."
    )
    messageId = serializers.CharField(
        required=False, allow_null=True, help_text="The idempotency key: a resend is ignored."
    )
    userId = serializers.CharField(
        required=False, allow_null=True, help_text="The contact's `external_id`."
    )
    anonymousId = serializers.CharField(
        required=False, allow_null=True, help_text="Kept in the payload of anonymous events."
    )
    event = serializers.CharField(
        required=False, help_text="track: the event name, mapped onto the name rule."
    )
    name = serializers.CharField(required=False, allow_null=True, help_text="page, screen.")
    properties = serializers.DictField(required=False, allow_null=True)
    traits = serializers.DictField(required=False, allow_null=True)
    groupId = serializers.CharField(required=False, help_text="group: the audience's name.")
    previousId = serializers.CharField(
        required=False, help_text="alias: the contact's current `external_id`."
    )
    # SerializerMetaclass moves declared fields out of the class, so this field does not
    # replace Field.context; the stubs cannot see that.
    context = serializers.DictField(required=False, allow_null=True)  # type: ignore[assignment]
    timestamp = serializers.DateTimeField(required=False, allow_null=True)
    sentAt = serializers.DateTimeField(required=False, allow_null=True)


class SegmentBatchSerializer(serializers.Serializer[Any]):
    """A `/v1/batch` body: up to 500 KB, each message up to 32 KB."""

    batch = SegmentMessageSerializer(many=True)
    # As above: not Field.context.
    context = serializers.DictField(  # type: ignore[assignment]
        required=False, allow_null=True, help_text="Merged under each message's own context."
    )
    sentAt = serializers.DateTimeField(
        required=False, allow_null=True, help_text="For messages without their own `sentAt`."
    )


class SegmentSuccessSerializer(serializers.Serializer[Any]):
    success = serializers.BooleanField()
