"""The rate limit of MCP Apps' requests: per app (user and call id), and per user for all of
their apps together (made-up call ids do not get round it)."""

import pytest

from switchboard.chat.apps.bridge import AppLimits, RequestBuckets
from switchboard.errors import RateLimited


def test_one_app_gets_its_burst_then_is_refused_and_other_users_are_not():
    buckets = RequestBuckets(AppLimits(requests_per_s=0.001, burst=3))
    for _ in range(3):
        buckets.take("alice", "call_a")
    with pytest.raises(RateLimited):
        buckets.take("alice", "call_a")
    buckets.take("bob", "call_a")  # someone else's bucket


def test_many_call_ids_of_one_user_share_the_users_bucket():
    buckets = RequestBuckets(AppLimits(requests_per_s=0.001, burst=2))
    for n in range(10):  # 5 times one app's burst
        buckets.take("alice", f"call_{n}")
    with pytest.raises(RateLimited):
        buckets.take("alice", "call_new")


def test_a_refused_request_keeps_no_bucket_and_one_user_cannot_push_out_anothers():
    buckets = RequestBuckets(AppLimits(requests_per_s=0.001, burst=3), max_users=100)
    for _ in range(3):
        buckets.take("alice", "call_a")
    for n in range(20_000):  # bob's made-up call ids: refused once his own bucket is empty
        try:
            buckets.take("bob", f"call_{n}")
        except RateLimited:
            pass
    with pytest.raises(RateLimited):
        buckets.take("alice", "call_a")  # alice's empty bucket is still hers
    assert len(buckets) <= 2 + 1 + 15  # alice's two, bob's own and his burst's worth of apps


def test_one_user_keeps_a_bounded_number_of_app_buckets():
    buckets = RequestBuckets(AppLimits(requests_per_s=1000, burst=1000), max_calls=8)
    for n in range(5_000):
        buckets.take("bob", f"call_{n}")
    assert len(buckets) == 1 + 8
