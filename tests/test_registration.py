"""Registration and unregistration: MEM-6, MEM-7, REG-1 to REG-9, UNREG-1 to UNREG-3."""

from uuid import UUID

import pytest

from cluster import FEATURES, Cluster, incarnation
from kraftspec.model import Config, Error, FeatureRange
from kraftspec.model.messages import BrokerRegistrationRequest, Feature, Listener
from kraftspec.model.records import BrokerEndpoint, BrokerFeature, PartitionChangeRecord, RegisterBrokerRecord, UnregisterBrokerRecord


def test_mem_6_registration_exchange_and_error_epoch():
    """MEM-6: success carries the epoch; an error carries BrokerEpoch -1."""
    c = Cluster()
    ok = c.register(1)
    assert (ok.error_code, ok.broker_epoch) == (Error.NONE, c.epoch(1))
    refused = c.register(2, cluster_id="another")
    assert (refused.error_code, refused.broker_epoch) == (Error.INVALID_CLUSTER_ID, -1)


@pytest.mark.parametrize(
    "fields",
    [
        {"broker_id": -1},
        {"incarnation_id": UUID(int=0)},
        {"current_metadata_offset": -2},
        {"listeners": [Listener("A", "h", 1), Listener("A", "h", 2)]},
        {"features": [Feature("metadata.format", 1, 1), Feature("metadata.format", 1, 1)]},
        {"features": [Feature("metadata.format", 2, 1)]},
        {"features": [Feature("metadata.format", -1, 1)]},
    ],
    ids=["negative-id", "zero-incarnation", "offset-below-minus-one", "duplicate-listener", "duplicate-feature", "min-above-max", "negative-min"],
)
def test_reg_1_malformed_registrations_are_refused(fields):
    """REG-1: INVALID_REQUEST, nothing written."""
    c = Cluster()
    request = dict(broker_id=1, cluster_id=c.state.config.cluster_id, incarnation_id=incarnation(1), features=FEATURES)
    request.update(fields)
    response = c.request(BrokerRegistrationRequest(**request))
    assert response.error_code == Error.INVALID_REQUEST
    assert c.records() == []
    assert c.state.image.brokers == {}


def test_reg_2_another_clusters_broker_is_refused():
    """REG-2: INVALID_CLUSTER_ID (code 104, DEC-15), nothing written."""
    c = Cluster()
    response = c.register(1, cluster_id="not-this-cluster")
    assert response.error_code == Error.INVALID_CLUSTER_ID == 104
    assert c.records() == [] and 1 not in c.state.image.brokers


def test_reg_3_retry_gets_the_same_result_and_writes_nothing():
    """REG-3, DEC-5: same incarnation -> same epoch, no record, flags untouched."""
    c = Cluster()
    c.start_brokers(1)
    epoch = c.epoch(1)
    retry = c.register(1, rack="changed-rack-is-not-compared")
    assert (retry.error_code, retry.broker_epoch) == (Error.NONE, epoch)
    assert c.records() == []
    assert not c.state.image.brokers[1].fenced  # the retry did not fence it again


def test_reg_3_retry_of_an_uncommitted_registration_waits_for_its_commit():
    """REG-3 with LOG-7: both answers are released together, with the same epoch."""
    c = Cluster()
    first = c.send(BrokerRegistrationRequest(1, c.state.config.cluster_id, incarnation(1), features=FEATURES))
    second = c.send(BrokerRegistrationRequest(1, c.state.config.cluster_id, incarnation(1), features=FEATURES))
    assert first.replies == () and second.replies == ()
    released = c.commit().replies
    assert [r.response.broker_epoch for r in released] == [c.epoch(1), c.epoch(1)]


def test_reg_3_retry_counts_as_contact():
    """REG-3, LEASE-7: a retry renews the lease."""
    c = Cluster()
    c.register(1)
    c.tick(10_000)
    c.register(1)
    assert c.state.leases[1].last_contact_ms == 10_000


def test_reg_4_other_incarnation_is_refused_while_the_id_had_recent_contact():
    """REG-4, DEC-6, DEC-7: refused until a full session timeout without contact, fenced or not."""
    c = Cluster()
    c.register(1)  # registered and fenced, contact at 0
    c.tick(17_999)
    assert c.register(1, generation=1).error_code == Error.DUPLICATE_BROKER_REGISTRATION
    assert c.records() == []
    c.tick(18_000)  # the claim lapses at the deadline exactly
    response = c.register(1, generation=1)
    assert response.error_code == Error.NONE
    assert c.state.image.brokers[1].incarnation_id == incarnation(1, 1)


def test_reg_4_a_fenced_broker_that_heartbeats_keeps_its_claim():
    """REG-4, DEC-6: heartbeats of a fenced broker are contact too (Kafka 4 agrees)."""
    c = Cluster()
    c.register(1)
    for t in (10_000, 20_000, 30_000):
        c.tick(t)
        assert c.heartbeat(1, want_fence=True).is_fenced
    c.tick(40_000)
    assert c.register(1, generation=1).error_code == Error.DUPLICATE_BROKER_REGISTRATION


@pytest.mark.parametrize("profile", ["kip-631", "kafka"])
def test_reg_4_a_broker_told_to_shut_down_gives_its_id_up_until_it_heartbeats_again(profile):
    """REG-4, DEC-6: ShouldShutDown releases the id in both profiles, so the restarted broker
    registers at once (Kafka refuses it until the old session ends: KAFKA-19047, a bug no profile
    copies); a later heartbeat of the old process, not answered ShouldShutDown, takes it back."""
    c = Cluster(profile=profile)
    c.start_brokers(1)
    assert c.heartbeat(1, want_shut_down=True).should_shut_down
    assert c.state.leases[1].released
    c.heartbeat(1, want_fence=True)  # the old process is still there after all
    assert not c.state.leases[1].released
    assert c.register(1, generation=1).error_code == Error.DUPLICATE_BROKER_REGISTRATION
    assert c.heartbeat(1, want_shut_down=True).should_shut_down
    assert c.register(1, generation=1).error_code == Error.NONE


def test_reg_4_a_fenced_broker_heard_from_after_a_failover_claims_its_id_again():
    """REG-4, LEASE-14, DEC-6: a broker fenced at a failover holds no claim until this controller
    hears from it; a heartbeat (not answered ShouldShutDown or otherwise) is contact and claims it."""
    c = Cluster()
    c.start_brokers(1)
    assert c.heartbeat(1, want_shut_down=True).should_shut_down
    c.failover()
    assert c.state.leases[1].released
    assert c.heartbeat(1, want_fence=True).is_fenced  # the old process is still there after all
    assert c.register(1, generation=1).error_code == Error.DUPLICATE_BROKER_REGISTRATION


def test_reg_5_a_broker_must_cover_every_finalized_range():
    """REG-5, DEC-23: containment of the whole finalized range; UNSUPPORTED_VERSION otherwise."""
    config = Config(finalized_features=(FeatureRange("metadata.format", 1, 2), FeatureRange("group.version", 0, 0)))
    c = Cluster(config)
    both = (Feature("metadata.format", 0, 3), Feature("group.version", 0, 1))
    assert c.register(1, features=both).error_code == Error.NONE
    narrow = (Feature("metadata.format", 1, 1), Feature("group.version", 0, 1))
    assert c.register(2, features=narrow).error_code == Error.UNSUPPORTED_VERSION
    missing = (Feature("metadata.format", 1, 2),)
    assert c.register(3, features=missing).error_code == Error.UNSUPPORTED_VERSION
    extra = (*both, Feature("not.finalized", 5, 7))
    assert c.register(4, features=extra).error_code == Error.NONE
    assert [f.name for f in c.state.image.brokers[4].features] == ["metadata.format", "group.version", "not.finalized"]


@pytest.mark.parametrize("profile", ["kip-631", "kafka"])
def test_reg_5_a_finalized_metadata_version_left_unlisted_is_an_invalid_registration(profile):
    """REG-5, DEC-15: with metadata.version finalized, a request that does not list it gets Kafka's
    INVALID_REGISTRATION, in both profiles; a listed range that misses a finalized level is checked
    first (UNSUPPORTED_VERSION), and another unlisted finalized feature is UNSUPPORTED_VERSION."""
    config = Config.for_profile(profile, finalized_features=(FeatureRange("metadata.version", 16, 16), FeatureRange("group.version", 1, 1)))
    c = Cluster(config)
    group = Feature("group.version", 0, 1)
    assert c.register(1, features=(group,)).error_code == Error.INVALID_REGISTRATION
    assert c.register(2, features=(Feature("group.version", 2, 3),)).error_code == Error.UNSUPPORTED_VERSION
    assert c.register(3, features=(Feature("metadata.version", 16, 16),)).error_code == Error.UNSUPPORTED_VERSION
    assert c.register(4, features=(Feature("metadata.version", 16, 17), group)).error_code == Error.NONE
    assert sorted(c.state.image.brokers) == [4]


def test_reg_6_accepted_registration_is_one_record_at_its_epoch_and_starts_fenced():
    """REG-6, DEC-4: BrokerEpoch = the record's offset; the response waits for commit."""
    c = Cluster()
    end = c.state.log_end_offset
    request = BrokerRegistrationRequest(
        7, c.state.config.cluster_id, incarnation(7), 41, [Listener("PLAINTEXT", "b7", 9092, 0)], FEATURES, "rack-a"
    )
    result = c.send(request)
    assert result.replies == ()  # waits for its commit (LOG-7)
    [batch] = result.batches
    assert batch.base_offset == end
    [record] = batch.records
    assert record == RegisterBrokerRecord(
        7, incarnation(7), end, [BrokerEndpoint("PLAINTEXT", "b7", 9092, 0)], [BrokerFeature("metadata.format", 1, 1)], "rack-a"
    )
    assert c.state.image.brokers[7].fenced
    [reply] = c.commit().replies
    assert reply.response.broker_epoch == end


def test_reg_7_broker_epochs_only_grow():
    """REG-7: re-registration, unregistration and failover never give an old epoch back."""
    c = Cluster(Config(session_timeout_ms=1000, heartbeat_interval_ms=100))
    c.register(1)
    first = c.epoch(1)
    c.register(2)
    c.tick(5000)
    assert c.register(1, generation=1).broker_epoch > first
    c.unregister(1)
    assert c.register(1, generation=2).broker_epoch > first
    committed_max = max(r.epoch for r in c.state.committed_image.brokers.values())
    c.register(3, commit=False)  # uncommitted
    c.failover()  # ... and lost; its offset is given out again
    assert c.register(3).broker_epoch > committed_max


def test_reg_8_replay_replaces_the_registration_wholesale_and_fenced():
    """REG-8: a new incarnation replaces everything, and starts fenced."""
    c = Cluster(Config(session_timeout_ms=1000, heartbeat_interval_ms=100))
    c.start_brokers(1)
    c.tick(1000)  # lapses: fenced
    c.register(1, generation=1, rack="r2")
    registration = c.state.image.brokers[1]
    assert (registration.incarnation_id, registration.rack, registration.fenced) == (incarnation(1, 1), "r2", True)


def test_reg_9_registration_touches_no_partition_and_the_new_incarnation_leads_again():
    """REG-9: the new incarnation stays the sole ISR member and is elected when unfenced (PART-7)."""
    c = Cluster(Config(session_timeout_ms=1000, heartbeat_interval_ms=100))
    c.start_brokers(1)
    c.create_topic("solo", assignment=[[1]])
    c.tick(1000)  # fenced: ISR [1], leader -1
    assert (c.partition("solo").isr, c.partition("solo").leader) == ((1,), -1)
    c.register(1, generation=1)
    assert [type(r) for r in c.records()] == [RegisterBrokerRecord]
    c.heartbeat(1)
    assert c.partition("solo").leader == 1


def test_mem_7_unregister_exchange_has_only_an_error_code():
    """MEM-7: the response is NONE, NOT_CONTROLLER or UNSUPPORTED_VERSION; here NONE."""
    c = Cluster()
    c.register(1)
    response = c.unregister(1)
    assert response.error_code == Error.NONE and not hasattr(response, "broker_epoch")


@pytest.mark.parametrize("broker_id", [5, -3])
def test_unreg_1_unregistering_an_unknown_id_succeeds_and_writes_nothing(broker_id):
    """UNREG-1, DEC-35: NONE, as seed 001 lists, where Kafka answers BROKER_ID_NOT_REGISTERED."""
    c = Cluster()
    assert c.unregister(broker_id).error_code == Error.NONE
    assert c.records() == []


def test_unreg_2_unregistering_takes_the_broker_out_of_isrs_and_leaderships_first():
    """UNREG-2, PART-8, DEC-20: partition changes, then the UnregisterBrokerRecord; no liveness check.
    The broker leaves the ISR and its leadership but stays in Replicas."""
    c = Cluster()
    c.start_brokers(1, 2, 3)
    c.create_topic("t", assignment=[[1, 2, 3]])
    c.create_topic("u", assignment=[[2, 3]])  # does not name broker 1: untouched
    epoch = c.epoch(1)
    assert c.unregister(1).error_code == Error.NONE  # broker 1 is active and leads: still allowed
    t = c.partition("t").topic_id
    assert c.records() == [
        PartitionChangeRecord(0, t, isr=(2, 3), leader=2),
        UnregisterBrokerRecord(1, epoch),
    ]
    assert c.partition("t").replicas == (1, 2, 3)


def test_unreg_3_replay_removes_the_registration_and_the_lease():
    """UNREG-3."""
    c = Cluster()
    c.start_brokers(1)
    c.unregister(1)
    assert 1 not in c.state.image.brokers and 1 not in c.state.committed_image.brokers
    assert 1 not in c.state.leases
