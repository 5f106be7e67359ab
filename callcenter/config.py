"""Configuration: a TOML file, then environment variables on top (what a systemd unit or container sets)."""

from __future__ import annotations

import ipaddress
import os
import re
import tomllib
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from callcenter.errors import CallCenterError
from callcenter.http_shop import HttpShopConfig, MappingError, load_mapping
from callcenter.llm_spec import LLMSpec, LLMSpecError, parse_llm, served
from callcenter.local_model import PACKAGED as PACKAGED_MODELS
from callcenter.redact import PHONE_REGIONS
from callcenter.swarm_file import SwarmFileError, load_swarm_file
from callcenter.verification import Verification, VerificationError
from swarm import TOOL_MODES, SessionConfig
from telephony import EndpointConfig, RegistrationConfig, TlsConfig


class ConfigError(CallCenterError):
    """The configuration cannot be used; the message names the key and what is allowed."""


def all_the_cores() -> int:
    """The cores this process may use."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def half_the_cores() -> int:
    """The local LLM's default threads: half the cores this process may use, at least one.

    llama.cpp's threads wait for each other at every step of a token, so one thread descheduled by Whisper,
    Piper or another job stalls them all: with 2 threads on 2 busy cores generation fell to 0.1 tokens/s,
    with 1 thread it kept 3-4 (benchmarks/local_llm_turns.py). Generation is bound by memory bandwidth, so
    the other half of the cores costs it little and keeps the calls' media and speech models fed.
    """
    return max(1, all_the_cores() // 2)


@dataclass(frozen=True)
class LLMConfig:
    # The LLM, in the words of callcenter.llm_spec (also `--llm`'s): "auto" is Ollama when it answers at `host`
    # with `model`, else the local model when its packages are installed, else the offline router.
    provider: str = "auto"
    host: str = "http://127.0.0.1:11434"
    model: str = "qwen3:4b"
    # A different model per agent, e.g. a small fast one for triage.
    agent_models: dict[str, str] = field(default_factory=dict)
    timeout: float = 20.0
    native_tools: bool = True
    # How tools reach the model: "native" tool calls, the "text" protocol, "constrained" decoding (only
    # "say this" or "call that tool" can be written), or "auto": the measured best for the provider.
    tool_mode: str = "auto"
    options: dict[str, Any] = field(default_factory=lambda: {"temperature": 0.2})
    # For `provider = "openai"`: the server's base URL and the variable holding its key.
    base_url: str = "http://127.0.0.1:8000/v1"
    api_key_env: str = "OPENAI_API_KEY"
    # For "local": llama.cpp's server run by VoiceSwarm with "qwen2.5-coder-1.5b" or "qwen2.5-coder-0.5b" (from
    # the model packages) or a .gguf file; its threads and context size (tokens, shared by the calls).
    local_model: str = "qwen2.5-coder-1.5b"
    local_threads: int = field(default_factory=half_the_cores)
    # The threads that read a prompt (a hand-over's history, tool results): every core this process may use.
    local_batch_threads: int = field(default_factory=all_the_cores)
    local_ctx: int = 4096
    # Calls whose model turns are decoded together (a copy of every agent's slot each: `local_ctx` tokens per agent
    # per call, ~115 MB per 4,096 tokens with the 1.5B); more calls than this take turns.
    local_parallel_calls: int = 2
    # When the LLM fails mid-call: "none" apologises and offers a person; "offline" lets the router carry on.
    fallback: str = "none"
    # The router's phrases take the steps they are sure of before the model does (triage's hand-over, the first
    # lookup of sales and refund, on the caller's words): milliseconds instead of a generation's seconds on a
    # CPU. false: the model takes every step.
    route_first: bool = True
    # A sentence classifier (all-MiniLM-L6-v2, ~7 ms a sentence) beside the phrases, for triage's hand-over to
    # sales or refund: it decides where the phrases are unsure and vetoes them where it is sure of the other; the
    # offline router's triage takes its sure calls too. false: the phrases alone.
    triage_classifier: bool = True

    def choosing(self, spec: LLMSpec) -> LLMConfig:
        """These settings with what `spec` names on top: its model serves every agent, its URL is the server's."""
        if spec.kind == "local" and spec.model:
            return replace(self, local_model=spec.model)
        if spec.kind in ("ollama", "openai") and spec.model:
            return replace(self, model=spec.model, agent_models={}, base_url=spec.url or self.base_url)
        return self


@dataclass(frozen=True)
class SipConfig:
    listen: str = "127.0.0.1:5060"
    # The address the PBX and the caller's media reach us at; needed when listening on 0.0.0.0.
    advertised: str | None = None
    rtp_ports: str = "10000-20000"
    # Trunk mode: only these networks (CIDR) may send calls; empty: anyone.
    allowed_sources: list[str] = field(default_factory=list)
    # Strict RTP: a call's media is taken only from the host its SDP named (any port: NAT), or from these
    # networks (CIDR: a media relay, or a PBX whose RTP leaves from another host than its SIP and SDP name).
    # strict_rtp = false: whoever sends to a call's port first is heard (phones behind NAT announcing a private
    # address); anyone who can reach the RTP ports can then take a new call's audio.
    media_sources: list[str] = field(default_factory=list)
    strict_rtp: bool = True
    max_calls: int = 20
    no_media_timeout_s: float = 30.0
    # SRTP with keys in SDP (SDES): "off"; "offer": encrypted when the caller offers keys, else plain RTP;
    # "require": calls without keys are refused (488), and our offers are RTP/SAVP.
    srtp: str = "off"
    # Also accept calls from Asterisk's AudioSocket() on this HOST:PORT, from allowed_sources only; empty: off.
    audiosocket_listen: str = ""
    # Extension mode: REGISTER to this registrar (a SIP URI, e.g. sip:pbx.example.com) with digest auth.
    registrar: str = ""
    username: str = ""
    password: str = ""  # better set with VOICESWARM_SIP_PASSWORD than in the file
    register_expires: int = 300
    # SIP over TCP and over TLS as well, each on its own HOST:PORT (5060 and 5061 are usual); empty: off.
    # A sips: or ;transport=tcp registrar is reached over that transport.
    listen_tcp: str = ""
    listen_tls: str = ""
    # For TLS: our certificate (PEM, intermediates after it) and its unencrypted key; the CAs that servers we
    # connect to are checked against (empty: the system's). Read at load time: a bad file is named then.
    tls_cert: str = ""
    tls_key: str = ""
    tls_ca: str = ""


# Silence kept after the caller's last word in an utterance; an early transcript needs at least this much.
# 120 ms: Whisper's words were the same as with 200 ms (tiny.en, 207 sentences, Piper and espeak-ng through the
# phone: 7.7/27.3% -> 7.0/26.7% tuning, 9.0/33.1% -> 9.3/32.3% blind), and so are its heads left unfinished.
EARLY_TAIL_MS = 120


@dataclass(frozen=True)
class VoiceConfig:
    greeting: str = "Hello, you're through to the shop. How can I help you today?"
    # A number or SIP URI of the operator queue for transfers (REFER); empty: nobody to transfer to.
    operator: str = ""
    reprompt_after_s: float = 8.0
    reprompts_before_hangup: int = 2
    max_call_s: float = 900.0
    # "tiny.en", "base" (from the model packages) or a CTranslate2 model directory. tiny.en answers one call
    # in 0.2 s (p50) and keeps 11 talking calls under 2 s on 2 cores, base 1.3 s and 2 calls; clear callers
    # get the same word error rate from both, hard ones ~25% fewer errors from base (benchmarks/).
    whisper_model: str = "tiny.en"
    # Seconds of audio Whisper's encoder hears (at least the utterance and 2 s); Whisper pads to 30 s, and
    # 30 keeps that. 0: 20 for tiny.en, which hears a 3 s turn in ~0.19 s instead of ~0.42 s with the same word
    # errors on phone audio, and 30 for the rest (base cut quiet callers short at 20; speech/whisper_window.py).
    whisper_window_s: float = 0.0
    # A Piper .onnx voice; empty: the packaged en_US joe voice.
    piper_voice: str = ""
    # Silence that ends the caller's turn (with the end-of-turn model: when it is unsure).
    end_silence_ms: int = 500
    # The end-of-turn model (Smart Turn v3.2): "" the installed one (python -m speech.turn install), a path,
    # or "off". After turn_silence_ms it hears the turn: done (>= turn_threshold) ends it there; mid-sentence
    # (< turn_hold_threshold) waits up to turn_max_silence_ms; in between, end_silence_ms as without it.
    # Off by default (benchmarks/turn_taking.py, 8 kHz Piper and espeak-ng callers): its verdicts on finished
    # and cut sentences overlap, so at 0.97 / 0.1 (tuned on half the corpus) it ends the turn no sooner than
    # silence (p50 0.55 s either way) and answers in 15 of 18 mid-sentence pauses instead of 18; at 0.5 it cut
    # 1-3 of 12 sentences at commas. Each judged pause costs ~165 ms of CPU (~3% of a core per call).
    turn_model: str = "off"
    turn_silence_ms: int = 200
    turn_max_silence_ms: int = 2000
    # A turn whose words stop where an English sentence cannot ("my order number is four five", "I want to
    # return the") waits for the rest up to turn_max_silence_ms after the caller's voice, and the two halves
    # are one turn (speech/turn_words.py: heard_unfinished; also what Whisper left unclosed, "I'd like to buy a
    # new"). Words Whisper is unsure of wait too, so an unclear head is heard again with the rest, and a caller
    # who says no more is asked to repeat after the wait. Costs nothing on finished sentences: the reply waits
    # for the words anyway. Turn it off for callers in other languages.
    mid_sentence_wait: bool = True
    # The languages the agents serve (ISO 639-1). The call's first unclear words (English ears hear other
    # languages as English nonsense) are given to Whisper base's language detector; a caller it hears, sure,
    # in another language is handed to the operator at once. Empty: no check (and base is not loaded for it).
    languages: tuple[str, ...] = ("en",)
    turn_threshold: float = 0.97
    turn_hold_threshold: float = 0.1
    # Transcription starts after this much silence, before the turn is sure to have ended (0: at the end);
    # the transcript is ready end_silence_ms - early_transcript_ms sooner, at the cost of some wasted CPU
    # when the caller only paused (at 120 ms, 1.05-1.26 pauses a sentence against 1.03-1.20 at 200; work
    # started at a pause is dropped as soon as the voice comes back). Heard 0.86 -> 0.77 s p50 on real calls.
    early_transcript_ms: int = 120
    # At that pause the model starts too, on the early transcript (no tool runs until the turn has ended,
    # and it is dropped if the caller goes on): the reply is ready sooner by up to the model's first sentence
    # when the transcript is in before the turn ends, as it is with tiny.en's 20 s window (~0.19 s). Measured
    # on real SIP calls with a 200 ms model (benchmarks/voice_to_voice.py --early-reply both): heard at the
    # caller 0.96 -> 0.85 s p50 at one call; with Whisper's full window it gained nothing (1.18, 1.22 s).
    early_reply: bool = True
    # A turn whose answer has not begun this long after the end of the turn hears a short acknowledgement
    # first ("One moment, please.", rendered at start-up), and something short again after every
    # still_working_ms of silence that follows, so the caller never waits in silence for a slow model (0: off).
    # A fast answer (a 200 ms model's, the router's) is heard before it: ~0.3 s after the end of the turn.
    acknowledge_after_ms: int = 350
    # 1.5 s: heard at the caller over real calls, a 2 s gap made silences of up to 2.34 s (the phrase's own
    # trailing silence and the jitter buffer add to it); benchmarks/heard_latency.py.
    still_working_ms: int = 1500
    # A turn whose words at that pause are a finished sentence, heard confidently, ends after this much
    # silence instead of end_silence_ms, or as soon as those words are in (0: off; needs early_transcript_ms).
    # Off by default: with early_reply the reply waits for the model started at the pause, not for the end
    # of turn (benchmarks/turn_taking.py, a 200 ms model, at 300 ms: heard 0.70 -> 0.69 and 0.65 -> 0.63 s p50
    # in two runs; real SIP calls no faster), while heads Whisper completes into sentences are answered in
    # shorter pauses (0.3-0.4 s: 0 -> 4-5 of 28 untouched and blind; none of those replies heard, they are
    # taken back) and 1 of 12 sentences was cut at a comma. Without early_reply it pays: heard 0.84-0.89 ->
    # 0.66-0.73 s p50 (tuned set).
    finished_silence_ms: int = 0
    # A path (SQLite) or a URL: sqlite:///var/calls.db, postgresql://voiceswarm@db/voiceswarm (shared by the nodes).
    calls_database: str = "var/calls.db"
    # Where Prometheus scrapes /metrics (and load balancers /health); empty: no metrics server.
    metrics_listen: str = "127.0.0.1:9460"
    # The bearer token Prometheus sends; needed unless metrics_listen is a loopback address.
    metrics_token: str = ""  # better set with VOICESWARM_METRICS_TOKEN than in the file
    shutdown_deadline_s: float = 30.0
    # Said at the deadline to each call still live (after the caller's current sentence), then BYE.
    drain_goodbye: str = (
        "I'm sorry, we have to end this call now. Please call again, you will be answered at once. Goodbye."
    )
    # Admission control (0: off): past any limit, new calls and the dispatcher's OPTIONS get 503 + Retry-After.
    max_active_calls: int = 0
    max_cpu_percent: float = 0.0
    max_stt_delay_s: float = 0.0
    retry_after_s: float = 30.0
    # Over a limit, a new call is "refuse"d (503 + Retry-After: the dispatcher tries the next node) or answered
    # and handed to voice.operator ("transfer": a short notice, then REFER). The probes get 503 either way.
    overload: str = "refuse"
    # Call recordings (README "Recordings"): "off", "on", or "announce" (the notice is spoken before the greeting).
    # One stereo WAV per call (caller left, agent right) under recording_dir/YYYY-MM-DD/; files older than
    # recording_days are deleted at start-up and daily (0: kept forever).
    recording: str = "off"
    recording_dir: str = "var/recordings"
    recording_days: int = 90
    recording_notice: str = "This call is recorded for quality and training."


RECORDING_MODES = ("off", "on", "announce")


@dataclass(frozen=True)
class SupervisorConfig:
    # The supervisor's page (live and past calls) on its own HOST:PORT, apart from /metrics; empty: off.
    listen: str = ""
    # Needed unless listen is a loopback address: sent as a bearer token, ?token=, or basic auth's password.
    token: str = ""  # better set with VOICESWARM_SUPERVISOR_TOKEN than in the file
    # Mask card numbers, IBANs, phone numbers and e-mail addresses (and the caller's number) on the page.
    redact: bool = True
    # Browsers reach the page over HTTPS through a proxy that ends TLS: the token's cookie is always Secure.
    behind_tls: bool = False
    # Proxies (addresses or networks, "10.0.0.5", "10.0.0.0/24") whose X-Forwarded-Proto and X-Forwarded-For
    # are believed: the cookie is Secure when they say https, and wrong tokens are counted per client behind them.
    trusted_proxies: tuple[str, ...] = ()


@dataclass(frozen=True)
class WebConfig:
    # `voiceswarm web`: the WebSocket text channel (callcenter/web.py); --listen overrides listen.
    listen: str = "127.0.0.1:8080"
    # A shared token for a trusted client (the CRM's server): the session it opens has no caller's identity.
    token: str = ""  # VOICESWARM_WEB_TOKEN
    # The HMAC key of per-customer tokens (callcenter/web_tokens.py): the only way a caller's number comes in.
    signing_key: str = ""  # VOICESWARM_WEB_SIGNING_KEY
    # Web pages of other origins allowed to open the socket ("https://shop.example"); its own always may.
    allowed_origins: tuple[str, ...] = ()
    max_message_chars: int = 2000  # what a caller could say in a turn; longer messages get an error frame
    messages_per_minute: int = 30  # per socket
    max_sockets: int = 100  # open at once, all clients together


@dataclass(frozen=True)
class PrivacyConfig:
    # Card numbers, IBANs, phone numbers and e-mail addresses masked in the stored transcripts, tool calls and
    # session events (callcenter/redact.py). On by default: card numbers must not be stored in the clear
    # (PCI DSS), and a call record is read by more people than the caller told them to. The LLM still hears
    # everything (it needs the numbers), and a recording keeps the audio as it was.
    redact_transcripts: bool = True
    # The country whose national phone numbers ("030 1234567") are recognised; +49..., 0049... always are.
    phone_region: str = "DE"


@dataclass(frozen=True)
class SwarmConfig:
    # The swarm file (agents, prompts, tools, hand-overs, the default agent, the operator): a call centre's own;
    # empty: the demo shop's, packaged as callcenter/data/swarm.toml. Checked when the config loads.
    file: str = ""


@dataclass(frozen=True)
class Config:
    llm: LLMConfig = field(default_factory=LLMConfig)
    database: str = "var/shop.db"  # a path (SQLite) or a URL: sqlite:///var/shop.db, postgresql://...
    session: SessionConfig = field(default_factory=SessionConfig)
    sip: SipConfig = field(default_factory=SipConfig)
    voice: VoiceConfig = field(default_factory=VoiceConfig)
    supervisor: SupervisorConfig = field(default_factory=SupervisorConfig)
    privacy: PrivacyConfig = field(default_factory=PrivacyConfig)
    web: WebConfig = field(default_factory=WebConfig)
    # [callers]: how callers are identified and verified before an order is read or changed (issue 29).
    callers: Verification = field(default_factory=Verification)
    # [shop] catalogue: the .csv or .json file a new shop database is filled from; empty: the demo catalogue.
    # Read only when the database has no products yet: `voiceswarm shop import` changes a live one.
    catalogue: str = ""
    swarm: SwarmConfig = field(default_factory=SwarmConfig)
    # [shop.http]: the call centre's own order system over HTTP serves the agents' shop tools (callcenter.http_shop);
    # None: the built-in store at `database`.
    shop_http: HttpShopConfig | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


# Environment variable -> (section, key, type).
ENVIRONMENT: dict[str, tuple[str, str, type]] = {
    "OLLAMA_HOST": ("llm", "host", str),
    "VOICESWARM_LLM": ("llm", "provider", str),
    "VOICESWARM_MODEL": ("llm", "model", str),
    "VOICESWARM_LLM_TIMEOUT": ("llm", "timeout", float),
    "VOICESWARM_LLM_FALLBACK": ("llm", "fallback", str),
    "OPENAI_BASE_URL": ("llm", "base_url", str),
    "VOICESWARM_LOCAL_MODEL": ("llm", "local_model", str),
    "VOICESWARM_TOOL_MODE": ("llm", "tool_mode", str),
    "VOICESWARM_DB": ("shop", "database", str),
    "VOICESWARM_CALLS_DB": ("voice", "calls_database", str),
    "VOICESWARM_HISTORY_SIZE": ("session", "history_size", int),
    "VOICESWARM_SIP_LISTEN": ("sip", "listen", str),
    "VOICESWARM_SIP_ADVERTISED": ("sip", "advertised", str),
    "VOICESWARM_SIP_PASSWORD": ("sip", "password", str),
    "VOICESWARM_OPERATOR": ("voice", "operator", str),
    "VOICESWARM_WHISPER_MODEL": ("voice", "whisper_model", str),
    "VOICESWARM_SUPERVISOR_TOKEN": ("supervisor", "token", str),
    "VOICESWARM_METRICS_TOKEN": ("voice", "metrics_token", str),
    "VOICESWARM_WEB_LISTEN": ("web", "listen", str),
    "VOICESWARM_WEB_TOKEN": ("web", "token", str),
    "VOICESWARM_WEB_SIGNING_KEY": ("web", "signing_key", str),
}


def load_config(path: str | Path | None = None, environ: Mapping[str, str] | None = None) -> Config:
    """Read the TOML file (if any), then apply environment variables, then check the result."""
    data: dict[str, Any] = {}
    if path is not None:
        try:
            data = tomllib.loads(Path(path).read_text())
        except (OSError, tomllib.TOMLDecodeError) as error:
            raise ConfigError(f"cannot read config file {path}: {error}") from error
    for variable, (section, key, kind) in ENVIRONMENT.items():
        value = (environ if environ is not None else os.environ).get(variable)
        if value:
            try:
                data.setdefault(section, {})[key] = kind(value)
            except ValueError as error:
                raise ConfigError(f"{variable}={value!r} is not a valid {kind.__name__}") from error
    http = data.get("shop", {}).pop("http", None) if isinstance(data.get("shop"), dict) else None
    config = _validated(_build(data))
    if http is None:
        return config
    # Its OpenAPI document is found beside the config file; its secret is read from the environment, now.
    base = Path(path).parent if path is not None else Path.cwd()
    try:
        if not isinstance(http, dict):
            raise MappingError(f"[shop.http] must be a table of keys, not {http!r}")
        mapping = load_mapping(http, base, environ)
    except MappingError as error:
        raise ConfigError(str(error)) from None
    return replace(config, shop_http=mapping)


def _build(data: dict[str, Any]) -> Config:
    llm = dict(_table(data, "llm"))
    llm["agent_models"] = dict(llm.pop("agents", {}), **llm.get("agent_models", {}))
    session = _table(data, "session")
    shop = _table(data, "shop")
    sip = _section(SipConfig, _table(data, "sip"), "sip")
    voice = _section(VoiceConfig, _table(data, "voice"), "voice")
    supervisor = _section(SupervisorConfig, _table(data, "supervisor"), "supervisor")
    privacy = _section(PrivacyConfig, _table(data, "privacy"), "privacy")
    callers = _section(Verification, _table(data, "callers"), "callers")
    web = _section(WebConfig, _table(data, "web"), "web")
    swarm = _section(SwarmConfig, _table(data, "swarm"), "swarm")
    if set(shop) - {"database", "catalogue"}:
        unknown = ", ".join(sorted(set(shop) - {"database", "catalogue"}))
        raise ConfigError(f"unknown keys in [shop]: {unknown}; allowed: catalogue, database")
    if data:
        raise ConfigError(f"unknown config keys: {', '.join(sorted(data))}")
    database = shop.get("database", Config.database)
    if not isinstance(database, str):
        raise ConfigError(f"shop.database must be a path or a URL (sqlite:///..., postgresql://...), not {database!r}")
    catalogue = shop.get("catalogue", "")
    if not isinstance(catalogue, str) or (catalogue and Path(catalogue).suffix.lower() not in (".csv", ".json")):
        raise ConfigError(f"shop.catalogue must be the path of a .csv or .json file, not {catalogue!r}")
    return Config(
        _section(LLMConfig, llm, "llm"),
        database,
        _section(SessionConfig, session, "session"),
        sip,
        voice,
        supervisor=supervisor,
        privacy=privacy,
        web=web,
        callers=callers,
        catalogue=catalogue,
        swarm=swarm,
    )


def _table(data: dict[str, Any], name: str) -> dict[str, Any]:
    table = data.pop(name, {})
    if not isinstance(table, dict):
        raise ConfigError(f"[{name}] must be a table of keys, not {table!r}")
    return table


def _section(cls: type, values: dict[str, Any], name: str) -> Any:
    known = {f.name for f in fields(cls)}
    unknown = sorted(set(values) - known)
    if unknown:
        raise ConfigError(f"unknown keys in [{name}]: {', '.join(unknown)}; allowed: {', '.join(sorted(known))}")
    defaults = cls()
    for key, value in values.items():
        expected = type(getattr(defaults, key))
        if getattr(defaults, key) is None:  # optional strings
            expected = str
        # TOML has no tuples, and an integer is a fine number of seconds.
        allowed = (list, tuple) if expected is tuple else (int, float) if expected is float else expected
        if not isinstance(value, allowed) or (expected is int and isinstance(value, bool)):
            raise ConfigError(f"{name}.{key} must be a {expected.__name__}, not {value!r}")
    values = {
        key: tuple(value) if isinstance(getattr(defaults, key), tuple) else value for key, value in values.items()
    }
    return replace(defaults, **values)


def _validated(config: Config) -> Config:
    try:
        spec = served(parse_llm(config.llm.provider))
    except LLMSpecError as error:
        raise ConfigError(f"llm.provider: {error}") from None
    if config.llm.fallback not in ("none", "offline"):
        raise ConfigError(f"llm.fallback is {config.llm.fallback!r}; use 'none' or 'offline'")
    if config.llm.tool_mode not in ("auto", *TOOL_MODES):
        raise ConfigError(f"llm.tool_mode is {config.llm.tool_mode!r}; use auto, {', '.join(TOOL_MODES)}")
    if not config.llm.timeout > 0:  # also refuses NaN
        raise ConfigError("llm.timeout must be positive (seconds)")
    _validate_local(config.llm.choosing(spec))
    if config.session.history_size < 2:
        raise ConfigError("session.history_size must be at least 2")
    if config.sip.registrar and not (config.sip.username and config.sip.password):
        raise ConfigError("sip.registrar is set: extension mode also needs sip.username and sip.password")
    voice = config.voice
    if voice.whisper_window_s and not 5 <= voice.whisper_window_s <= 30:
        raise ConfigError(f"voice.whisper_window_s is {voice.whisper_window_s}; use 5 to 30 (seconds), or 0")
    if not 200 <= voice.end_silence_ms <= 5000:
        raise ConfigError(f"voice.end_silence_ms is {voice.end_silence_ms}; use 200 to 5000 (milliseconds)")
    if voice.early_transcript_ms and not EARLY_TAIL_MS <= voice.early_transcript_ms < voice.end_silence_ms:
        raise ConfigError(
            f"voice.early_transcript_ms is {voice.early_transcript_ms}; use 0 (off) or "
            f"{EARLY_TAIL_MS} up to end_silence_ms ({voice.end_silence_ms})"
        )
    if voice.finished_silence_ms and not 100 <= voice.finished_silence_ms <= voice.end_silence_ms:
        raise ConfigError(
            f"voice.finished_silence_ms is {voice.finished_silence_ms}; use 0 (off) or "
            f"100 up to end_silence_ms ({voice.end_silence_ms})"
        )
    if not 100 <= voice.turn_silence_ms < voice.turn_max_silence_ms <= 5000:
        raise ConfigError(
            f"voice.turn_silence_ms and turn_max_silence_ms are {voice.turn_silence_ms} and "
            f"{voice.turn_max_silence_ms}; use 100 <= turn_silence_ms < turn_max_silence_ms <= 5000"
        )
    if not all(isinstance(code, str) and re.fullmatch(r"[a-z]{2}", code) for code in voice.languages):
        raise ConfigError(f'voice.languages are ISO 639-1 codes such as "en", not {list(voice.languages)!r}')
    if not 0.0 < voice.turn_threshold < 1.0:
        raise ConfigError(f"voice.turn_threshold is {voice.turn_threshold}; use a probability between 0 and 1")
    if not 0.0 <= voice.turn_hold_threshold <= voice.turn_threshold:
        raise ConfigError(
            f"voice.turn_hold_threshold is {voice.turn_hold_threshold}; use 0 up to turn_threshold ({voice.turn_threshold})"
        )
    if voice.turn_model != "off" and not voice.turn_silence_ms < voice.end_silence_ms <= voice.turn_max_silence_ms:
        raise ConfigError(
            f"with voice.turn_model, use turn_silence_ms < end_silence_ms <= turn_max_silence_ms "
            f"(now {voice.turn_silence_ms}, {voice.end_silence_ms}, {voice.turn_max_silence_ms})"
        )
    _validate_recording(voice)
    _validate_metrics(voice)
    if voice.overload not in ("refuse", "transfer"):
        raise ConfigError(f"voice.overload is {voice.overload!r}; use 'refuse' or 'transfer'")
    if voice.overload == "transfer" and not voice.operator.strip():
        raise ConfigError(
            'voice.overload is "transfer" but voice.operator is empty: name the operator queue to hand calls to'
        )
    if config.privacy.phone_region not in PHONE_REGIONS:
        raise ConfigError(
            f"privacy.phone_region is {config.privacy.phone_region!r}; use a two-letter country code like DE or US"
        )
    try:
        config.callers.check()
    except VerificationError as error:
        raise ConfigError(str(error)) from None
    if config.callers.phone_region not in PHONE_REGIONS:
        raise ConfigError(
            f"callers.phone_region is {config.callers.phone_region!r}; use a two-letter country code like DE or US"
        )
    low, _, high = config.sip.rtp_ports.partition("-")
    if not (low.isdigit() and high.isdigit() and 1024 <= int(low) < int(high) <= 65535):
        raise ConfigError(f"sip.rtp_ports is {config.sip.rtp_ports!r}; write a range like 10000-20000")
    endpoint_config(config.sip)  # the endpoint's own checks, now rather than after the models have loaded
    _validate_audiosocket(config.sip)
    check_caller_id_door(config)
    _validate_supervisor(config.supervisor)
    validate_web(config.web)
    return _with_swarm_file(config)


def _with_swarm_file(config: Config) -> Config:
    """The swarm file read and its shape checked now (its tool names when the registry is built, at start-up);
    its operator is the call's unless voice.operator (or VOICESWARM_OPERATOR) names one."""
    # Here, not at the top: the agents' module imports the shop and its tools, which a config needs only now.
    from callcenter.agents import check_swarm

    try:
        swarm = load_swarm_file(config.swarm.file or None)
        check_swarm(swarm)
    except SwarmFileError as error:
        raise ConfigError(str(error)) from None
    if swarm.operator and not config.voice.operator.strip():
        return replace(config, voice=replace(config.voice, operator=swarm.operator))
    return config


def _validate_recording(voice: VoiceConfig) -> None:
    if voice.recording not in RECORDING_MODES:
        raise ConfigError(f"voice.recording is {voice.recording!r}; use one of {', '.join(RECORDING_MODES)}")
    if voice.recording_days < 0:
        raise ConfigError(f"voice.recording_days is {voice.recording_days}; use 0 (keep forever) or a number of days")
    if voice.recording != "off" and not voice.recording_dir.strip():
        raise ConfigError("voice.recording_dir is empty: name the directory the recordings go to")
    if voice.recording == "announce" and not voice.recording_notice.strip():
        raise ConfigError(
            'voice.recording is "announce" but voice.recording_notice is empty: write the sentence to play'
        )


MIN_TOKEN_CHARS = 16


def _validate_metrics(voice: VoiceConfig) -> None:
    """/metrics tells how busy the node is and what it refused: only Prometheus's, beyond this machine."""
    if not voice.metrics_listen:
        return
    host, _ = _host_port(voice.metrics_listen, "voice.metrics_listen")
    _check_secret(voice.metrics_token, "voice.metrics_token")
    if not voice.metrics_token and not is_loopback(host):
        raise ConfigError(
            f"voice.metrics_listen is {voice.metrics_listen!r}, not a loopback address: set voice.metrics_token "
            "(or VOICESWARM_METRICS_TOKEN; Prometheus sends it as a bearer token), or listen on 127.0.0.1"
        )


def _validate_audiosocket(sip: SipConfig) -> None:
    """AudioSocket has no authentication: beyond this machine, only the PBX's networks may connect."""
    if not sip.audiosocket_listen:
        return
    host, _ = _host_port(sip.audiosocket_listen, "sip.audiosocket_listen")
    if not sip.allowed_sources and not is_loopback(host):
        raise ConfigError(
            f"sip.audiosocket_listen is {sip.audiosocket_listen!r}, not a loopback address, and sip.allowed_sources "
            'is empty: list Asterisk\'s network in sip.allowed_sources (e.g. ["10.0.0.10/32"]), or listen on 127.0.0.1'
        )


def check_caller_id_door(config: Config, listen: str | None = None) -> None:
    """callers.caller_id = "trusted" believes the SIP From number: only when the door lets in no one but a trunk
    or PBX that vouches for it. `listen`: a HOST:PORT that replaces sip.listen (`serve --listen`)."""
    sip = config.sip
    if config.callers.caller_id != "trusted" or sip.allowed_sources:
        return
    for key, value in (
        ("sip.listen", listen or sip.listen),
        ("sip.listen_tcp", sip.listen_tcp),
        ("sip.listen_tls", sip.listen_tls),
    ):
        if value and not is_loopback(_host_port(value, key)[0]):
            raise ConfigError(
                f"{key} is {value!r}, not a loopback address, with sip.allowed_sources empty and callers.caller_id = "
                '"trusted": anyone who reaches the port could call with a customer\'s number in From and be read '
                'their orders. List your trunk or PBX in sip.allowed_sources (e.g. ["10.0.0.10/32"]), or set '
                'callers.caller_id = "claimed" (every order then needs verify_with)'
            )


def _validate_supervisor(supervisor: SupervisorConfig) -> None:
    """The page shows what callers say: never served without a token beyond this machine."""
    if not supervisor.listen:
        return
    host, _ = _host_port(supervisor.listen, "supervisor.listen")
    _check_secret(supervisor.token, "supervisor.token")
    for proxy in supervisor.trusted_proxies:
        try:
            ipaddress.ip_network(proxy, strict=False)
        except ValueError:
            raise ConfigError(
                f"supervisor.trusted_proxies: {proxy!r} is not an address or network like 10.0.0.5 or 10.0.0.0/24"
            ) from None
    if not supervisor.token and not is_loopback(host):
        raise ConfigError(
            f"supervisor.listen is {supervisor.listen!r}, not a loopback address: set supervisor.token "
            "(or VOICESWARM_SUPERVISOR_TOKEN), or listen on 127.0.0.1"
        )


# Fewer different characters than this is a word or a pattern, not a secret ("a" * 16, 16 spaces).
MIN_TOKEN_DISTINCT = 8


def _check_secret(secret: str, key: str, least: int = MIN_TOKEN_CHARS) -> None:
    """A token or key, when set, must be one that cannot be guessed: long, random, no whitespace."""
    if not secret:
        return
    if len(secret) < least or len(set(secret)) < MIN_TOKEN_DISTINCT or any(c.isspace() for c in secret):
        raise ConfigError(
            f"{key} is too short or too plain: use at least {least} random characters without spaces "
            "(python -c 'import secrets; print(secrets.token_urlsafe(32))')"
        )


def validate_web(web: WebConfig) -> None:
    """The text channel acts for callers (their orders, their returns): never open beyond this machine."""
    host, _ = _host_port(web.listen, "web.listen")
    _check_secret(web.token, "web.token")
    _check_secret(web.signing_key, "web.signing_key", least=32)
    if not (web.token or web.signing_key) and not is_loopback(host):
        raise ConfigError(
            f"web.listen is {web.listen!r}, not a loopback address: set web.token (VOICESWARM_WEB_TOKEN) or "
            "web.signing_key (VOICESWARM_WEB_SIGNING_KEY), or listen on 127.0.0.1"
        )
    for origin in web.allowed_origins:
        if not re.fullmatch(r"https?://[A-Za-z0-9.-]+(:\d{1,5})?", origin):
            raise ConfigError(f'web.allowed_origins: {origin!r} is not an origin like "https://shop.example"')
    for key in ("max_message_chars", "messages_per_minute", "max_sockets"):
        if getattr(web, key) < 1:
            raise ConfigError(f"web.{key} is {getattr(web, key)}; use a positive number")


def is_loopback(host: str) -> bool:
    """Whether only this machine can reach HOST (a name other than localhost may resolve anywhere)."""
    host = host.strip("[]")
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def endpoint_config(sip: SipConfig, listen: str | None = None) -> EndpointConfig:
    """The SIP endpoint's settings; raises ConfigError naming the [sip] key to change."""
    host, port = _host_port(listen or sip.listen, "sip.listen")
    streams = {
        key: (address[0].strip("[]"), address[1]) if (address := _optional_host_port(sip, key)) else None
        for key in ("listen_tcp", "listen_tls")
    }
    if bool(sip.tls_cert) != bool(sip.tls_key):
        raise ConfigError("TLS needs both sip.tls_cert and sip.tls_key (PEM files)")
    try:
        registration = (
            RegistrationConfig(sip.registrar, sip.username, sip.password, expires=sip.register_expires)
            if sip.registrar
            else None
        )
        tls = TlsConfig(sip.tls_cert, sip.tls_key, sip.tls_ca or None) if sip.tls_cert else None
        return EndpointConfig(
            listen_host=host.strip("[]"),
            listen_port=port,
            advertised_host=sip.advertised,
            rtp_port_range=rtp_port_range(sip),
            allowed_sources=tuple(sip.allowed_sources) or None,
            media_sources=tuple(sip.media_sources),
            strict_rtp=sip.strict_rtp,
            max_calls=sip.max_calls,
            no_media_timeout_s=sip.no_media_timeout_s,
            registration=registration,
            srtp=sip.srtp,
            listen_tcp=streams["listen_tcp"],
            listen_tls=streams["listen_tls"],
            tls=tls,
        )
    except ValueError as error:
        # The endpoint names its own fields; the admin edits the [sip] keys they come from.
        message = str(error).replace("advertised_host", "sip.advertised").replace("listen_host", "sip.listen")
        message = message.replace("allowed_sources", "sip.allowed_sources").replace("srtp must", "sip.srtp must")
        message = message.replace("media_sources", "sip.media_sources")
        message = message.replace("listen_tcp", "sip.listen_tcp").replace("listen_tls", "sip.listen_tls")
        message = message.replace(
            "needs tls: a TlsConfig with our certificate and key", "needs sip.tls_cert and sip.tls_key"
        )
        raise ConfigError(message) from None


def _validate_local(llm: LLMConfig) -> None:
    if llm.local_model not in PACKAGED_MODELS:
        if not llm.local_model.endswith(".gguf"):
            raise ConfigError(
                f"llm.local_model is {llm.local_model!r}; use {' or '.join(PACKAGED_MODELS)}, or the path of a .gguf file"
            )
        if not Path(llm.local_model).is_file():
            raise ConfigError(f"llm.local_model: the file {llm.local_model} does not exist")
    if not 1 <= llm.local_threads <= 256:
        raise ConfigError(f"llm.local_threads is {llm.local_threads}; use 1 up to the number of cores")
    if not 1 <= llm.local_batch_threads <= 256:
        raise ConfigError(f"llm.local_batch_threads is {llm.local_batch_threads}; use 1 up to the number of cores")
    if not 1 <= llm.local_parallel_calls <= 16:
        raise ConfigError(f"llm.local_parallel_calls is {llm.local_parallel_calls}; use 1 to 16")
    if not 512 <= llm.local_ctx <= 32768:
        raise ConfigError(f"llm.local_ctx is {llm.local_ctx}; use 512 to 32768 tokens (the models' limit)")


def _optional_host_port(sip: SipConfig, key: str) -> tuple[str, int] | None:
    text = getattr(sip, key)
    return _host_port(text, f"sip.{key}") if text else None


def _host_port(text: str, key: str) -> tuple[str, int]:
    host, _, port = text.rpartition(":")
    if not host or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ConfigError(f"{key} is {text!r}; write HOST:PORT, like 127.0.0.1:5060")
    return host, int(port)


def host_port(text: str) -> tuple[str, int]:
    """HOST:PORT as a tuple (the config was validated, so this cannot fail on a loaded Config)."""
    return _host_port(text, "address")


def rtp_port_range(config: SipConfig) -> tuple[int, int]:
    low, _, high = config.rtp_ports.partition("-")
    return int(low), int(high)
