import factory

from accounts.models import ApiKey, Merchant
from accounts.services import api_key_issue


class MerchantFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Merchant

    name = factory.Sequence(lambda n: f"Merchant {n}")
    email = factory.LazyAttribute(lambda m: f"owner{m.name.split()[-1]}@example.test")


class ApiKeyFactory(factory.django.DjangoModelFactory):
    """Issues a key through the service; the plaintext is on `key.plaintext` for the test."""

    class Meta:
        model = ApiKey

    merchant = factory.SubFactory(MerchantFactory)
    kind = ApiKey.Kind.SECRET
    livemode = False

    class Params:
        publishable = factory.Trait(kind=ApiKey.Kind.PUBLISHABLE)
        live = factory.Trait(livemode=True)

    @classmethod
    def _create(cls, model_class, *, merchant, kind, livemode, **kwargs):
        issued = api_key_issue(merchant=merchant, kind=kind, livemode=livemode, **kwargs)
        issued.api_key.plaintext = issued.secret
        return issued.api_key
