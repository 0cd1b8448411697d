"""Builds and tears down everything the service uses, in order. Nothing is created at import."""

from __future__ import annotations

import asyncio
import gc
import logging
import time
from collections.abc import AsyncIterator, Awaitable
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass

import httpx
from fastapi import FastAPI
from langgraph.checkpoint.mongodb import MongoDBSaver

from app.agents.factory import create_runner, describe_agents
from app.agents.relay import RELAY_DIR, AgentRelay
from app.agents.workspace import WorkspaceManager
from app.chat.compression import ChatCompressor
from app.clients.aiohttp_transport import AiohttpTransport
from app.clients.delivery import DeliveryService
from app.clients.knowledge_base import KnowledgeBaseClient
from app.clients.kotlin import KotlinClient
from app.clients.outbox import OutboxWriter
from app.config import Settings
from app.correction.service import CorrectionService
from app.correction.store import RuleStore
from app.graph.builder import build_graph
from app.graph.context import RunContext
from app.graph.llm_gate import ApprovingLlm
from app.health import HealthChecker
from app.llm.health import ProviderHealth
from app.llm.provider import LitellmProvider
from app.observability.metrics import Metrics
from app.observability.redaction import Redactor
from app.persistence import console_sessions as console_module
from app.persistence import context_store as context_store_module
from app.persistence import lock as lock_module
from app.persistence import outbox as outbox_module
from app.persistence import project_memory as project_memory_module
from app.persistence import runs as runs_module
from app.persistence import sign_in_throttle as throttle_module
from app.persistence.console_sessions import ConsoleSessions, ConsoleStore, SessionLimits
from app.persistence.context_store import ContextStore
from app.persistence.indexes import KOTLIN_INDEXES, ensure_indexes
from app.persistence.lock import OrchestrationLock
from app.persistence.mongo import MongoConcerns, MongoTimeouts, create_client, create_sync_client, ping
from app.persistence.outage import MongoOutage
from app.persistence.outbox import OutboxStore
from app.persistence.project_memory import ProjectMemory
from app.persistence.redacting_serde import RedactingSerializer
from app.persistence.runs import RunStore
from app.persistence.sign_in_throttle import SignInThrottle
from app.runs.admission import Admission
from app.runs.crash_recovery import RecoveryService
from app.runs.events import EventHub
from app.runs.lifecycle import RunDriver
from app.runs.manager import RunManager
from app.runs.retention import CheckpointRetention
from app.runs.views import RunViews
from app.runtime.pod_identity import claim_pod_identity

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Services:
    settings: Settings
    runs: RunManager
    views: RunViews
    """Reads of runs for people: the list, one run, its diff."""
    events: EventHub
    health: HealthChecker
    kotlin: KotlinClient
    metrics: Metrics
    context_store: ContextStore
    chat_compressor: ChatCompressor
    correction: CorrectionService
    redact: Redactor
    """The one redaction of outgoing text (SSE, checkpoints, context store, pushes, HTTP errors)."""
    console: ConsoleStore
    """The console's sessions and sign-in throttle."""


@asynccontextmanager
async def lifespan(app: FastAPI) -> AsyncIterator[None]:
    settings: Settings = getattr(app.state, "settings", None) or Settings()
    async with AsyncExitStack() as stack:
        identity = claim_pod_identity(settings)  # before anything acts as this pod
        stack.callback(identity.release)
        settings = settings.model_copy(update={"pod_id": identity.pod_id})
        redact = Redactor.for_settings(settings)
        timeouts = MongoTimeouts(connect_seconds=settings.mongodb_timeout_seconds,
                                 socket_seconds=settings.mongodb_socket_timeout_seconds)
        concerns = MongoConcerns.from_settings(settings)  # inherited by every collection and the checkpointer
        mongo = create_client(settings.mongodb_url, timeouts=timeouts, concerns=concerns)
        stack.push_async_callback(mongo.close)
        db = mongo[settings.mongodb_database]
        lock = OrchestrationLock(
            db[lock_module.COLLECTION_NAME], pod_id=identity.pod_id, slots=settings.max_concurrent_orchestrations,
            heartbeat_seconds=settings.lock_heartbeat_seconds, stale_seconds=settings.lock_stale_seconds,
        )
        context_store = ContextStore(db[context_store_module.COLLECTION_NAME], ttl_days=settings.context_ttl_days,
                                     redact=redact)
        run_store = RunStore(db[runs_module.COLLECTION_NAME])
        outbox_store = OutboxStore(db[outbox_module.COLLECTION_NAME], pod_id=identity.pod_id,
                                   lease_seconds=settings.outbox_lease_seconds)
        console = ConsoleStore(
            ConsoleSessions(db[console_module.COLLECTION_NAME], SessionLimits(
                lifetime_seconds=settings.console_session_hours * 3600,
                idle_seconds=settings.console_idle_minutes * 60)),
            SignInThrottle(db[throttle_module.COLLECTION_NAME], attempts=settings.console_sign_in_attempts))
        setups: list[Awaitable[object]] = [lock.setup(), context_store.setup(), run_store.setup(),
                                            outbox_store.setup(), console.sessions.setup(), console.throttle.setup()]
        if settings.kotlin_mongodb_database:
            setups.append(ensure_indexes(mongo[settings.kotlin_mongodb_database], KOTLIN_INDEXES))
        await asyncio.gather(*setups)
        metrics = Metrics()
        outage = MongoOutage(lambda: ping(mongo), wait_seconds=settings.mongodb_outage_wait_seconds)
        metrics.mongodb_waits.set_function(lambda: outage.waiting)

        sync_mongo = create_sync_client(settings.mongodb_url, timeouts=timeouts, concerns=concerns)
        stack.callback(sync_mongo.close)
        checkpointer = MongoDBSaver(sync_mongo, db_name=settings.checkpoint_database,
                                    serde=RedactingSerializer(redact))

        http = httpx.AsyncClient(transport=AiohttpTransport(max_connections=50))
        stack.push_async_callback(http.aclose)
        delivery = DeliveryService(
            outbox_store, http, settings.kotlin_server_url, push_timeout=settings.push_timeout_seconds,
            retry_base_seconds=settings.outbox_retry_base_seconds, retry_max_seconds=settings.outbox_retry_max_seconds,
            poll_seconds=settings.outbox_poll_seconds, metrics=metrics,
        )
        outbox = OutboxWriter(
            outbox_store, on_stored=delivery.notify, status_expiry_seconds=settings.outbox_status_expiry_seconds,
            progress_expiry_seconds=settings.outbox_progress_expiry_seconds,
            capacity=settings.outbox_memory_capacity, metrics=metrics,
        )
        # Stopped in reverse: the writer stores what the runs' shutdown produced, then delivery drains.
        await delivery.start()
        stack.push_async_callback(delivery.stop)
        await outbox.start()
        stack.push_async_callback(outbox.stop)
        kotlin = KotlinClient(http, settings.kotlin_server_url, outbox, redact=redact,
                              tracker_timeout=settings.tracker_timeout_seconds)
        kb = KnowledgeBaseClient(http, settings.knowledgebase_url, settings.kb_write_url,
                                 timeout=settings.kb_timeout_seconds, write_timeout=settings.kb_write_timeout_seconds)
        workspaces = WorkspaceManager(settings.data_root)
        relay = AgentRelay(workspaces.root / RELAY_DIR)  # sandboxed agents reach their model through it
        await relay.start()
        stack.push_async_callback(relay.stop)  # after the runs' shutdown: a step being stopped still has it
        llm = LitellmProvider(settings, metrics=metrics)
        llm.prices.log_summary()  # a tier the dollar budget cannot count is said at start-up, and in /health
        context = RunContext(
            settings=settings, llm=ApprovingLlm(llm), kb=kb, kotlin=kotlin, context_store=context_store,
            project_memory=ProjectMemory(db[project_memory_module.COLLECTION_NAME]),
            runner=create_runner(settings, workspaces, metrics, redact=redact, relay=relay), workspaces=workspaces,
        )
        graph = build_graph().compile(checkpointer=checkpointer)
        events = EventHub(capacity=settings.stream_buffer_events, thread_bytes=settings.stream_buffer_bytes,
                          max_threads=settings.stream_hub_threads,
                          max_bytes=settings.stream_hub_bytes, event_bytes=settings.stream_event_bytes, redact=redact)
        driver = RunDriver(graph, context, kotlin, metrics, outage)
        admission = Admission(lock, slots=settings.max_concurrent_orchestrations)
        llm_health = ProviderHealth(llm, http, cache_seconds=settings.llm_health_cache_seconds,
                                    timeout=settings.llm_health_timeout_seconds)
        manager = RunManager(settings=settings, graph=graph, driver=driver, admission=admission, runs=run_store,
                             kotlin=kotlin, events=events, workspaces=workspaces, metrics=metrics,
                             redact=redact, outage=outage, llm_health=llm_health)
        metrics.active_runs.set_function(lambda: manager.active_count)
        metrics.outbox_unwritten.set_function(lambda: outbox.pending)

        async def refresh_lock(m: Metrics) -> None:
            m.set_lock_slots(await lock.slots_state(), identity.pod_id)

        metrics.on_scrape(refresh_lock)

        async def refresh_outbox(m: Metrics) -> None:
            stats = await outbox_store.stats()
            oldest = stats.oldest_created_at
            m.set_outbox(stats.depth, 0.0 if oldest is None else time.time() - oldest)

        metrics.on_scrape(refresh_outbox)
        stack.push_async_callback(context_store.drain)
        stack.push_async_callback(manager.shutdown)
        recovery = RecoveryService(runs=run_store, admission=admission, adopter=manager,
                                   interval_seconds=settings.recovery_interval_seconds)
        await recovery.start()
        stack.push_async_callback(recovery.stop)  # stopped before the manager shuts down
        if settings.checkpoint_retention_days > 0:
            retention = CheckpointRetention(runs=run_store, checkpoints=checkpointer,
                                            keep_seconds=settings.checkpoint_retention_days * 86400,
                                            interval_seconds=settings.checkpoint_retention_sweep_seconds)
            await retention.start()
            stack.push_async_callback(retention.stop)
        health = HealthChecker(settings=settings, mongo=mongo, http=http, kb=kb, runs=manager, llm=llm_health)
        correction = CorrectionService(
            llm=llm, store=RuleStore(kb), progress_sink=kotlin,
            progress_interval=settings.correction_progress_interval_seconds, language=settings.response_language,
        )
        views = RunViews(manager=manager, runs=run_store, graph=graph, driver=driver, events=events,
                         workspaces=workspaces)
        app.state.services = Services(settings=settings, runs=manager, views=views, events=events, health=health,
                                      kotlin=kotlin, metrics=metrics, context_store=context_store,
                                      chat_compressor=ChatCompressor(llm), correction=correction, redact=redact,
                                      console=console)
        log.info("orchestrator ready (pod %s from %s, runner %s, max %d concurrent)", identity.pod_id,
                 identity.source, settings.agent_runner, settings.max_concurrent_orchestrations)
        for agent_type, runs_it in describe_agents(settings).items():
            log.info("agent %s: %s", agent_type, runs_it)
        # Everything built so far lives as long as the process (graphs, litellm's tables, the
        # clients): out of the collector's sight, a full collection of the heap no longer stalls
        # the event loop for ~300 ms at a time under load (docs/operations.md, load).
        gc.collect()  # start-up's garbage first: what is frozen is never freed
        gc.freeze()
        yield
