from switchboard.tools import qualify
from switchboard.tools.naming import MAX_NAME


def test_plain_names_join_server_and_tool():
    assert qualify("pdfbasic", "analyze_pdf", set()) == "pdfbasic_analyze_pdf"


def test_illegal_characters_are_replaced():
    name = qualify("my.server", "get weather/now!", set())
    assert name == "my_server_get_weather_now_"


def test_long_names_are_cut_to_64_with_a_stable_suffix():
    long_tool = "t" * 100
    first = qualify("server", long_tool, set())
    assert len(first) == MAX_NAME
    assert first == qualify("server", long_tool, set())  # stable across runs
    assert first != qualify("server", "t" * 99 + "u", set())


def test_collisions_get_distinct_names():
    taken: set[str] = set()
    a = qualify("a_b", "c", taken)
    taken.add(a)
    b = qualify("a", "b_c", taken)  # also "a_b_c"
    assert a == "a_b_c" and b != a and b.startswith("a_b_c_")
    taken.add(b)
    assert len(b) <= MAX_NAME
