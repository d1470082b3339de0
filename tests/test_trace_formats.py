"""Published trace formats (sim/trace_formats.py): each told from its first line, mapped to a
Workload as our CSV is (sorted by arrival, arrival_s from the first request, ids the file's row or
line numbers), described in one plain line, and refused in one line naming the bad rows.

The small files below are written in each format as its project publishes it: Azure's
`TIMESTAMP,ContextTokens,GeneratedTokens` with 7-digit fractions (2023) or `+00:00` (2024),
BurstGPT's six columns (and the eight of its later files), Mooncake's JSONL with 512-token
hash_ids blocks (values shaped like FAST25-release/traces/conversation_trace.jsonl).
"""

from __future__ import annotations

import io
import json
import random

import numpy as np
import pytest

from sim import trace_formats
from sim.errors import SimInputError
from sim.load import load_workload, load_workload_described
from sim.trace import read_trace_csv
from sim.trace_formats import detect_format, read_trace

AZURE_2023 = (
    "TIMESTAMP,ContextTokens,GeneratedTokens\n"
    "2023-11-16 18:15:46.6805900,374,44\n"
    "2023-11-16 18:15:50.9951690,396,109\n"
    "2023-11-16 18:15:46.7805900,4808,10\n"  # out of order: sorted to second
    "2023-11-16 18:16:00.0000000,1200,0\n"  # 0 generated tokens: skipped
)
AZURE_2024 = (
    "TIMESTAMP,ContextTokens,GeneratedTokens\n"
    "2024-05-10 00:00:00.009930+00:00,2162,5\n"
    "2024-05-10 00:00:01.509930+00:00,180,23\n"
)
BURSTGPT = (
    "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n"
    "5,ChatGPT,472,18,490,Conversation log\n"
    "45,ChatGPT,1087,230,1317,Conversation log\n"
    "118,GPT-4,417,276,693,Conversation log\n"
    "120,GPT-4,300,0,300,API log\n"  # a failure (Response tokens 0)
    "121,ChatGPT,0,20,20,API log\n"  # no prompt
)
BURSTGPT_SESSIONS = (
    "Timestamp,Session ID,Elapsed time,Model,Request tokens,Response tokens,Total tokens,Log Type\n"
    "19440110.0,1722ac82-0a46-4bf0-aa08-89794e7a2b3f,43,GPT-4,906,446,1352,Conversation log\n"
    "19440161.0,d5983bf9-4b48-497b-892b-a58995247443,2,ChatGPT,36,29,65,Conversation log\n"
)
MOONCAKE = [
    {"timestamp": 0, "input_length": 6758, "output_length": 500, "hash_ids": list(range(14))},
    {"timestamp": 0, "input_length": 2290, "output_length": 316, "hash_ids": [0, 42, 43, 44, 45]},
    # a second turn of the first conversation: its first 13 blocks are the first request's
    {
        "timestamp": 3000,
        "input_length": 7300,
        "output_length": 14,
        "hash_ids": [*range(13), 99, 100],
    },  # fmt: skip
    {"timestamp": 1500, "input_length": 915, "output_length": 355, "hash_ids": [7, 8]},
    {"timestamp": 1600, "input_length": 1100, "output_length": 9, "hash_ids": [0, 42, 43]},
    {"timestamp": 3052, "input_length": 300, "output_length": 0, "hash_ids": [0]},  # skipped
]


def _file(text: str | bytes, name: str) -> io.BytesIO:
    buffer = io.BytesIO(text.encode() if isinstance(text, str) else text)
    buffer.name = name
    return buffer


def _jsonl(rows: list[dict]) -> str:
    return "".join(json.dumps(r) + "\n" for r in rows)


def test_each_format_is_told_from_its_first_line():
    assert detect_format(AZURE_2023.encode()) == "azure"
    assert detect_format(b"\xef\xbb\xbf timestamp , contexttokens,GENERATEDTOKENS\n") == "azure"
    assert detect_format(BURSTGPT.encode()) == "burstgpt"
    assert detect_format(BURSTGPT_SESSIONS.encode()) == "burstgpt"
    assert detect_format(_jsonl(MOONCAKE).encode()) == "mooncake"
    assert detect_format(b"", "trace.jsonl") == "mooncake"
    assert detect_format(b"arrival_s,prompt_tokens,output_tokens\n0,1,1\n") == "stepwise"
    # our own columns win, and an unknown header is ours (with our own messages)
    assert detect_format(b"arrival_s,prompt_tokens,output_tokens,TIMESTAMP\n") == "stepwise"
    assert detect_format(b"time,prompt,output\n") == "stepwise"


def test_azure_2023_is_mapped_and_described():
    workload, fmt, said = read_trace(_file(AZURE_2023, "AzureLLMInferenceTrace_conv.csv"))
    assert fmt == "azure"
    assert workload.request_ids == ("1", "3", "2")  # data row numbers, sorted by arrival
    assert workload.arrival_s.tolist() == pytest.approx([0.0, 0.1, 4.314579])
    assert workload.prompt_tokens.tolist() == [374, 4808, 396]
    assert workload.output_tokens.tolist() == [44, 10, 109]
    assert workload.prefix_id.tolist() == [-1, -1, -1]
    assert said.startswith("Azure LLM inference trace: TIMESTAMP (a date and time) → arrival_s")
    assert "ContextTokens → prompt_tokens, GeneratedTokens → output_tokens; 3 requests" in said
    assert "skipped 1 row with 0 GeneratedTokens" in said
    assert "\n" not in said


def test_azure_2024_time_zone_stamps_are_read():
    workload, fmt, said = read_trace(_file(AZURE_2024, "code_1week.csv"))
    assert fmt == "azure" and "skipped" not in said
    assert workload.arrival_s.tolist() == pytest.approx([0.0, 1.5])


def test_burstgpt_is_mapped_and_its_failures_are_skipped_and_counted():
    workload, fmt, said = read_trace(_file(BURSTGPT, "BurstGPT_1.csv"))
    assert fmt == "burstgpt"
    assert workload.arrival_s.tolist() == [0.0, 40.0, 113.0]
    assert workload.prompt_tokens.tolist() == [472, 1087, 417]
    assert workload.output_tokens.tolist() == [18, 230, 276]
    assert workload.request_ids == ("1", "2", "3")
    assert "Timestamp (seconds) → arrival_s (seconds after the first request)" in said
    assert "Request tokens → prompt_tokens, Response tokens → output_tokens; 3 requests" in said
    assert "1 row with 0 Response tokens (failed requests) and 1 row with 0 Request tokens" in said
    assert said.endswith("not used: Model, Total tokens, Log Type")


def test_burstgpt_with_session_columns_is_read():
    workload, fmt, said = read_trace(_file(BURSTGPT_SESSIONS, "BurstGPT_3.csv"))
    assert fmt == "burstgpt"
    assert workload.arrival_s.tolist() == [0.0, 51.0]
    assert "not used: Session ID, Elapsed time, Model, Total tokens, Log Type" in said


def test_mooncake_is_mapped_with_its_shared_blocks_as_prefixes():
    workload, fmt, said = read_trace(_file(_jsonl(MOONCAKE), "conversation_trace.jsonl"))
    assert fmt == "mooncake"
    assert workload.request_ids == ("1", "2", "4", "5", "3")  # line numbers, by arrival
    assert workload.arrival_s.tolist() == [0.0, 0.0, 1.5, 1.6, 3.0]  # ms -> s
    assert workload.prompt_tokens.tolist() == [6758, 2290, 915, 1100, 7300]
    pid = dict(zip(workload.request_ids, workload.prefix_id.tolist(), strict=True))
    tokens = dict(zip(workload.request_ids, workload.prefix_tokens.tolist(), strict=True))
    # Lines 1 and 3 share 13 blocks (13 x 512 tokens): one path, block 0 included.
    assert tokens["1"] == tokens["3"] == 13 * 512 and pid["1"] == pid["3"] >= 0
    # Lines 2 and 5 share [0, 42, 43]: 3 blocks, capped at line 5's 1,100-token prompt. Block 0
    # is on the other path too (a tie of two requests each, the smaller hash id continues it),
    # so their copy of block 0 is not shared with lines 1 and 3: the one reuse lost.
    assert (tokens["2"], tokens["5"]) == (3 * 512, 1100)
    assert pid["2"] == pid["5"] >= 0 and pid["2"] != pid["1"]
    assert tokens["4"] == 0 and pid["4"] == -1  # [7, 8] starts no one else's prompt
    assert "hash_ids (blocks of 512 tokens) → prefix_id and prefix_tokens; 5 requests" in said
    assert "4 share leading blocks with another request, in 2 prefix groups" in said
    # reuses in the trace: block 0 three times (4 requests), blocks 1-12, 42, 43 once = 17
    assert "keeps 16 of the trace's 17 reused blocks (94%)" in said
    assert said.endswith(
        "skipped 1 line with 0 output_length: a request needs a prompt and an answer"
    )


def test_a_prefix_is_never_longer_than_what_two_prompts_really_share():
    """On random prefix trees: two requests with the same prefix_id share at least the tokens
    the model says (min of their prefix_tokens), and a shared leading block is never dropped
    when it has a path of its own."""
    rng = random.Random(7)
    for _ in range(30):
        prompts: list[list[int]] = []
        fresh = 1000
        for _ in range(rng.randint(1, 40)):
            if prompts and rng.random() < 0.7:
                base = rng.choice(prompts)
                ids = base[: rng.randint(1, len(base))]
            else:
                ids = []
            ids = list(ids) + list(range(fresh, fresh + rng.randint(0, 4)))
            fresh += 5
            prompts.append(ids or [fresh])
        rows = [
            {"timestamp": i, "input_length": 512 * len(h), "output_length": 3, "hash_ids": h}
            for i, h in enumerate(prompts)
        ]
        w = read_trace(_file(_jsonl(rows), "t.jsonl")).workload
        for a in range(w.num_requests):
            for b in range(a + 1, w.num_requests):
                ha, hb = prompts[int(w.request_ids[a]) - 1], prompts[int(w.request_ids[b]) - 1]
                common = 0
                while common < min(len(ha), len(hb)) and ha[common] == hb[common]:
                    common += 1
                if w.prefix_id[a] == w.prefix_id[b] >= 0:
                    said = min(w.prefix_tokens[a], w.prefix_tokens[b])
                    assert said <= common * 512, (ha, hb)
        # every request that shares its first block with another keeps some prefix
        firsts = [p[0] for p in prompts]
        for r, rid in enumerate(w.request_ids):
            if firsts.count(prompts[int(rid) - 1][0]) > 1:
                assert w.prefix_tokens[r] >= 512


@pytest.mark.parametrize(
    ("text", "name", "says"),
    [
        (
            "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.68,10,2\n"
            "yesterday,x,-1\n",
            "az.csv",
            "TIMESTAMP is not a date and time in 1 row: row 3; ContextTokens is not a number in"
            " 1 row: row 3; GeneratedTokens is negative in 1 row: row 3 (row 1 is the header)",
        ),
        (
            "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.68,10.5,2\n"
            "2023-11-16 18:15:47,,2\n",
            "az.csv",
            "ContextTokens is empty in 1 row: row 3",
        ),
        (
            "Timestamp,Model,Request tokens,Response tokens\n1,ChatGPT,5,6\n2,GPT-4,5,6.5\n"
            "3,GPT-4,5,nan\n",
            "b.csv",
            "Response tokens is not a number in 1 row: row 4 (row 1 is the header)",
        ),
        (
            "Timestamp,Model,Request tokens,Response tokens\n1,ChatGPT,5,0\n2,GPT-4,0,3\n",
            "b.csv",
            "every request has 0 Request tokens or 0 Response tokens",
        ),
        (
            "Timestamp,Model,Request tokens,Response tokens\n",
            "b.csv",
            "has a header but no requests",
        ),
        (
            '{"timestamp": 0, "input_length": 10, "output_length": 2, "hash_ids": [1]}\n'
            "not json\n"
            '{"timestamp": 5, "input_length": 10}\n'
            '{"timestamp": -5, "input_length": 10, "output_length": 2}\n'
            '{"timestamp": 6, "input_length": 10.5, "output_length": 2}\n'
            '{"timestamp": 7, "input_length": 10, "output_length": 2, "hash_ids": [1, "a"]}\n'
            "[1, 2]\n",
            "m.jsonl",
            "no valid JSON object in 2 lines: lines 2, 7; output_length is missing in 1 line:"
            " line 3; timestamp is negative in 1 line: line 4; input_length is not a whole"
            " number in 1 line: line 5; hash_ids is not a list of whole numbers in 1 line: line 6",
        ),
        ("\n\n", "m.jsonl", "is empty"),
        (
            '{"timestamp": 0, "input_length": 0, "output_length": 2}\n',
            "m.jsonl",
            "every request has 0 input_length or 0 output_length",
        ),
        (b'{"timestamp": 0, \xff}\n', "m.jsonl", "not UTF-8 text"),
    ],
)
def test_bad_rows_are_named_in_one_line(text, name, says):
    with pytest.raises(SimInputError) as err:
        read_trace(_file(text, name))
    message = str(err.value)
    assert message.startswith(f"{name}") and says in message and "\n" not in message


def test_prompts_too_long_for_the_model_are_refused_by_row_or_line():
    with pytest.raises(SimInputError, match=r"ContextTokens >= max_model_len=1000 .* row 4 "):
        read_trace(_file(AZURE_2023, "az.csv"), max_model_len=1000)
    with pytest.raises(SimInputError, match=r"in 2 lines: lines 1, 3$"):
        read_trace(_file(_jsonl(MOONCAKE), "m.jsonl"), max_model_len=4096)
    # a skipped row (0 output tokens) is not refused for its length
    read_trace(_file(AZURE_2023, "az.csv"), max_model_len=4809)


def test_the_row_limit_holds_for_every_format(monkeypatch):
    import sim.trace

    monkeypatch.setattr(trace_formats, "MAX_TRACE_ROWS", 2)
    with pytest.raises(SimInputError, match="more than 2 requests"):
        read_trace(_file(_jsonl(MOONCAKE), "m.jsonl"))
    monkeypatch.setattr(sim.trace, "MAX_TRACE_ROWS", 2)  # pandas reads at most limit + 1 rows
    with pytest.raises(SimInputError, match="more than 2 rows"):
        read_trace(_file(BURSTGPT, "b.csv"))


def test_our_own_csv_is_read_exactly_as_before(tmp_path):
    text = "arrival_s,prompt_tokens,output_tokens,tenant\n1.5,10,2,bob\n0.5,20,3,amy\n"
    mapped = read_trace(_file(text, "ours.csv"))
    direct = read_trace_csv(_file(text, "ours.csv"))
    assert mapped.format == "stepwise" and mapped.description.endswith("2 requests")
    for field in ("arrival_s", "prompt_tokens", "output_tokens", "tenant", "prefix_id"):
        assert getattr(mapped.workload, field).tolist() == getattr(direct, field).tolist()
    assert mapped.workload.request_ids == direct.request_ids == ("2", "1")
    bad = "arrival_s,prompt_tokens,output_tokens\n0,abc,2\n"
    with pytest.raises(SimInputError) as ours:
        read_trace(_file(bad, "x.csv"))
    with pytest.raises(SimInputError) as before:
        read_trace_csv(_file(bad, "x.csv"))
    assert str(ours.value) == str(before.value)
    with pytest.raises(SimInputError, match="trace file not found"):
        read_trace(tmp_path / "missing.jsonl")


def test_the_command_line_loads_each_format_by_path(tmp_path):
    moon = tmp_path / "trace.jsonl"
    moon.write_text(_jsonl(MOONCAKE))
    workload, said = load_workload_described(str(moon))
    assert workload.num_requests == 5 and said.startswith("Mooncake trace:")
    azure = tmp_path / "azure.csv"
    azure.write_text(AZURE_2024)
    assert load_workload(str(azure)).prompt_tokens.tolist() == [2162, 180]
    ours = tmp_path / "ours.csv"
    ours.write_text("arrival_s,prompt_tokens,output_tokens\n0,5,1\n")
    assert load_workload_described(str(ours))[1] is None  # our CSV: nothing to say
    assert load_workload_described("burst:n=2,prompt=fixed:7")[1] is None
    with pytest.raises(SimInputError, match="trace file not found"):
        load_workload(str(tmp_path / "gone.jsonl"))


def test_a_column_name_from_the_file_is_quoted_only_as_data():
    """The description quotes the file's other column names: on the page it goes through
    controls.shown (plain text); here, it is at least one line and bounded by the header."""
    text = "Timestamp,Request tokens,Response tokens,[x](http://e.x)\n1,5,6,a\n"
    said = read_trace(_file(text, "b.csv")).description
    assert said.endswith("not used: [x](http://e.x)") and "\n" not in said
    assert np.isfinite(read_trace(_file(text, "b.csv")).workload.arrival_s).all()
