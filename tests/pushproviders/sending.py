"""Set-up for push sending tests, made through the API as a customer would: an app, its
providers and installations of contacts."""

from dataclasses import dataclass, field
from typing import Any

from bench import keys
from contacts.models import Contact
from pushproviders.models import PushApp, PushInstallation, PushProvider
from tests.contacts.factories import ContactFactory

APNS_KEY_ID = "ABC123DEFG"
APNS_TEAM_ID = "TEAM123456"
APNS_BUNDLE_ID = "com.example.app"


@dataclass
class PushWorld:
    """One app of the test world's project with what a send needs."""

    api: Any
    world: Any
    app: PushApp
    providers: dict[str, PushProvider] = field(default_factory=dict)

    @property
    def key(self) -> str:
        return self.world.keys["project"]

    def provider(self, platform: str, **settings: Any) -> PushProvider:
        response = self.api.post(
            f"/push/apps/{self.app.id}/providers",
            {"platform": platform, **settings},
            key=self.key,
        )
        assert response.status_code == 201, response.content
        provider = PushProvider.objects.get(pk=response.json()["data"]["id"])
        self.providers[platform] = provider
        return provider

    def fcm(self, account: dict[str, Any] | None = None) -> PushProvider:
        return self.provider("fcm", service_account=account or keys.service_account())

    def apns(self, private_key: str | None = None) -> PushProvider:
        return self.provider(
            "apns",
            apns_key_id=APNS_KEY_ID,
            apns_team_id=APNS_TEAM_ID,
            apns_private_key=private_key or keys.apns_p8(),
            apns_bundle_id=APNS_BUNDLE_ID,
            apns_environment="sandbox",
        )

    def webpush(self, private_key: str | None = None, public_key: str | None = None) -> Any:
        if private_key is None:
            private_key, public_key = keys.vapid_pair()
        return self.provider(
            "webpush",
            web_vapid_private_key=private_key,
            web_vapid_public_key=public_key,
            web_vapid_subject="mailto:push@example.com",
        )

    def install(self, contact: Contact, platform: str, device: Any) -> PushInstallation:
        body: dict[str, Any] = {
            "app_id": str(self.app.id),
            "platform": platform,
            "contact_id": str(contact.id),
        }
        if platform == "webpush":
            body["subscription"] = device
        else:
            body["token"] = device
        response = self.api.post("/push/installations", body, key=self.key)
        assert response.status_code == 201, response.content
        return PushInstallation.objects.get(pk=response.json()["data"]["id"])

    def contact(self, **fields: Any) -> Contact:
        return ContactFactory(project=self.world.project, fields=fields)

    def send(self, body: dict[str, Any], *, key: str = "project", **kw: Any) -> Any:
        return self.api.post(
            "/push/send", {"app_id": str(self.app.id), **body}, key=self.world.keys[key], **kw
        )


def push_world(api: Any, world: Any) -> PushWorld:
    response = api.post("/push/apps", {"name": "Shop"}, key=world.keys["project"])
    assert response.status_code == 201, response.content
    return PushWorld(
        api=api, world=world, app=PushApp.objects.get(pk=response.json()["data"]["id"])
    )
