"""Each contact an email campaign emailed gets its `CampaignRecipient` row (status
`queued`), as push campaigns' contacts have, and that row's unique (campaign, contact) key
replaces the emails' own, so the emails table can be partitioned by time (a unique key
there would be unique per month only). Going back deletes those rows of email campaigns
and makes the emails' key again (the recipients' key kept it true meanwhile)."""

from django.db import migrations

_FILL = (
    "INSERT INTO messaging_campaignrecipient (campaign_id, contact_id, status, reason, created_at) "
    "SELECT e.campaign_id, e.contact_id, 'queued', '', e.created_at FROM messaging_email e "
    "JOIN messaging_campaign c ON c.id = e.campaign_id "
    "WHERE e.contact_id IS NOT NULL "
    "ON CONFLICT (campaign_id, contact_id) DO NOTHING"
)
_UNFILL = (
    "DELETE FROM messaging_campaignrecipient r USING messaging_campaign c "
    "WHERE c.id = r.campaign_id AND c.channel = 'email' AND r.status = 'queued'"
)


class Migration(migrations.Migration):
    dependencies = [("messaging", "0013_email_keys")]

    operations = [
        migrations.RunSQL(_FILL, _UNFILL),
        migrations.RemoveConstraint(model_name="email", name="email_campaign_contact_unique"),
    ]
