"""Factories for tenancy objects; each app's tests add their own beside them."""

import factory
from django.contrib.auth import get_user_model
from factory.django import DjangoModelFactory

from tenancy.models import Membership, Plan, Project, Role, Team


class TeamFactory(DjangoModelFactory):
    class Meta:
        model = Team

    name = factory.Sequence(lambda n: f"Team {n}")
    messaging_rollout = True


class ProjectFactory(DjangoModelFactory):
    class Meta:
        model = Project

    team = factory.SubFactory(TeamFactory)
    name = factory.Sequence(lambda n: f"Project {n}")


class UserFactory(DjangoModelFactory):
    class Meta:
        model = get_user_model()
        django_get_or_create = ("username",)

    username = factory.Sequence(lambda n: f"user{n}@example.com")
    email = factory.SelfAttribute("username")


class MembershipFactory(DjangoModelFactory):
    class Meta:
        model = Membership

    team = factory.SubFactory(TeamFactory)
    user = factory.SubFactory(UserFactory)
    role = Role.MEMBER


class PlanFactory(DjangoModelFactory):
    class Meta:
        model = Plan

    name = factory.Sequence(lambda n: f"Plan {n}")
