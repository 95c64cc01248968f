import pytest

from switchboard.config.models import ComplianceLevel, ComplianceLevels, LLMConfig, ModelConfig
from switchboard.errors import LLMUnavailable
from switchboard.identity.access import Access
from switchboard.identity.users import User
from switchboard.llm import ModelCatalogue

DEMO = ModelConfig(name="demo", model="switchboard/demo", description="Works without any LLM")
GPT = ModelConfig(name="gpt", model="openai/gpt-4o-mini", api_key_env="OPENAI_API_KEY", compliance_level="External")
LOCAL = ModelConfig(name="local", model="ollama_chat/llama3", api_base="http://gpu:11434", compliance_level="Internal")
RESEARCH = ModelConfig(name="research", model="openai/o3", api_key_env="OPENAI_API_KEY", groups=["research"])

LEVELS = ComplianceLevels(
    levels=[
        ComplianceLevel(name="Public", allowed_with=["Internal", "External"]),
        ComplianceLevel(name="Internal", allowed_with=[]),
        ComplianceLevel(name="External", allowed_with=[]),
    ]
)
KEY = {"OPENAI_API_KEY": "sk-test"}


def catalogue(
    *models: ModelConfig, default: str | None = "demo", environ: dict[str, str] | None = None
) -> ModelCatalogue:
    return ModelCatalogue(LLMConfig(default_model=default, models=list(models)), environ=environ or {})


def acc(groups: set[str], level: str | None = None, levels: ComplianceLevels | None = None) -> Access:
    return Access(User("a@example.com", frozenset(groups)), level, levels or ComplianceLevels())


def by_name(entries):
    return {entry.name: entry for entry in entries}


def test_model_with_missing_key_is_listed_unavailable_with_reason():
    entries = by_name(catalogue(DEMO, GPT).entries(acc({"users"})))

    assert entries["gpt"].available is False
    assert entries["gpt"].reason == "OPENAI_API_KEY is not set"
    assert entries["demo"].available is True and entries["demo"].reason is None


def test_model_with_key_set_is_available():
    entries = by_name(catalogue(DEMO, GPT, environ=KEY).entries(acc({"users"})))

    assert entries["gpt"].available is True
    assert entries["gpt"].compliance_level == "External"


def test_empty_key_counts_as_missing():
    entries = by_name(catalogue(GPT, environ={"OPENAI_API_KEY": ""}).entries(acc({"users"})))

    assert entries["gpt"].available is False


def test_entries_only_list_models_of_the_users_groups():
    assert list(by_name(catalogue(DEMO, RESEARCH, environ=KEY).entries(acc({"users"})))) == ["demo"]
    assert list(by_name(catalogue(DEMO, RESEARCH, environ=KEY).entries(acc({"research"})))) == ["demo", "research"]


def test_entries_follow_the_conversations_compliance_level():
    models = catalogue(DEMO, GPT, LOCAL, environ=KEY)

    assert list(by_name(models.entries(acc({"users"}, "Internal", LEVELS)))) == ["demo", "local"]
    assert list(by_name(models.entries(acc({"users"}, "Public", LEVELS)))) == ["demo", "gpt", "local"]
    assert list(by_name(models.entries(acc({"users"}, None, LEVELS)))) == ["demo", "gpt", "local"]


def test_demo_entry_says_it_is_a_demo():
    (entry,) = catalogue(DEMO).entries(acc({"users"}))

    assert entry.is_demo is True
    assert "demo" in entry.description.lower()
    assert "Works without any LLM" in entry.description


def test_unknown_builtin_model_is_unavailable():
    (entry,) = catalogue(ModelConfig(name="x", model="switchboard/other")).entries(acc({"users"}))

    assert entry.available is False
    assert "switchboard/demo" in entry.reason


def test_configured_default_wins_when_available():
    assert catalogue(DEMO, GPT, LOCAL, default="local", environ=KEY).default_model_name(acc({"users"})) == "local"


def test_demo_default_gives_way_to_the_first_available_real_model():
    models = catalogue(DEMO, GPT, LOCAL, default="demo", environ=KEY)

    assert models.default_model_name(acc({"users"})) == "gpt"


def test_demo_is_default_only_while_nothing_else_is_available():
    models = catalogue(DEMO, GPT, default="demo")

    assert models.default_model_name(acc({"users"})) == "demo"


def test_unavailable_default_falls_back_to_an_available_model():
    assert catalogue(DEMO, GPT, LOCAL, default="gpt").default_model_name(acc({"users"})) == "local"
    assert catalogue(DEMO, GPT, default="gpt").default_model_name(acc({"users"})) == "demo"


def test_default_respects_compliance_and_groups():
    models = catalogue(DEMO, GPT, LOCAL, RESEARCH, default="research", environ=KEY)

    assert models.default_model_name(acc({"research"})) == "research"
    assert models.default_model_name(acc({"users"})) == "gpt"
    assert models.default_model_name(acc({"users"}, "Internal", LEVELS)) == "local"


def test_no_default_when_nothing_is_available():
    assert catalogue(GPT, default="gpt").default_model_name(acc({"users"})) is None


def test_resolve_returns_the_named_model():
    assert catalogue(DEMO, GPT, environ=KEY).resolve("gpt", acc({"users"})) == GPT


def test_resolve_without_a_name_gives_the_default():
    assert catalogue(DEMO, GPT, environ=KEY).resolve(None, acc({"users"})).name == "gpt"
    assert catalogue(DEMO, GPT).resolve(None, acc({"users"})).name == "demo"


def test_resolve_unknown_model_names_the_choices():
    with pytest.raises(LLMUnavailable) as caught:
        catalogue(DEMO, LOCAL).resolve("gpt-5", acc({"users"}))

    assert "gpt-5" in caught.value.message
    assert "demo" in caught.value.action and "local" in caught.value.action


def test_resolve_model_of_other_groups_is_refused():
    with pytest.raises(LLMUnavailable, match="research"):
        catalogue(DEMO, RESEARCH, environ=KEY).resolve("research", acc({"users"}))


def test_resolve_model_without_key_says_which_variable():
    with pytest.raises(LLMUnavailable, match="OPENAI_API_KEY is not set"):
        catalogue(DEMO, GPT).resolve("gpt", acc({"users"}))


def test_resolve_model_forbidden_by_compliance_says_why():
    with pytest.raises(LLMUnavailable) as caught:
        catalogue(DEMO, GPT, environ=KEY).resolve("gpt", acc({"users"}, "Internal", LEVELS))

    assert "External" in caught.value.message and "Internal" in caught.value.message


def test_resolve_without_any_usable_model():
    with pytest.raises(LLMUnavailable, match="No model"):
        catalogue(GPT, default="gpt").resolve(None, acc({"users"}))
