"""The viewer's pages as functions from query results to HTML bodies (`harness.view.html`
escapes every value; nothing here writes a stored string without `esc` or `text_block`)."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence

from harness.records import StepRecord, TurnRecord
from harness.view.boards import Board
from harness.view.html import esc, link, number, select, table, text_block, url
from harness.view.queries import (FLAGS, EpisodeDetail, EpisodePage, EpisodeRow,
                                  PairedOutcomes, RunSummary, TaskOutcomes)


def _when(stamp: float | None) -> str:
    return "—" if stamp is None else time.strftime("%Y-%m-%d %H:%M:%SZ", time.gmtime(stamp))


def _outcome(row: EpisodeRow) -> str:
    if row.status != "ok":
        return f'<span class="fail">{esc(row.status)}</span>'
    return '<span class="ok">success</span>' if row.success else '<span class="fail">failure</span>'


def episode_url(run_id: str, row: EpisodeRow | EpisodeDetail) -> str:
    row = row.row if isinstance(row, EpisodeDetail) else row
    return url("/episode", run=run_id, policy=row.policy, suite=row.suite, task=row.task_id,
               seed=row.eval_seed, sample=row.sample)


# -- runs -----------------------------------------------------------------------------------
def _progress(run: RunSummary) -> str:
    """Episodes stored, against the planned total where the run's config gives one (a live
    run's progress: the page shows what the store has committed when it is loaded)."""
    stored = f"{run.n_episodes} stored"
    if run.planned:
        stored = (f'<progress value="{min(run.n_episodes, run.planned)}" '
                  f'max="{run.planned}"></progress> {run.n_episodes} of at most '
                  f"{run.planned} planned")
    return f'<span class="progress">{stored}</span> ({run.successes} successes)'


def runs_page(runs: Sequence[RunSummary]) -> str:
    if not runs:
        return "<p>No runs stored yet: start one with <code>harness run</code>.</p>"
    rows = []
    for run in runs:
        config = run.config
        what = ", ".join(str(x) for x in config.get("policies", [])) + " on " + \
            ", ".join(str(x) for x in config.get("suites", []))
        statuses = ", ".join(f"{esc(s)}: {n}" for s, n in sorted(run.statuses.items())) or "—"
        kinds = "<br>".join(
            link(url("/episodes", run=run.run_id,
                     flag="timeout" if kind == "timeout" else "errored"), f"{kind}: {n}")
            for kind, n in run.error_kinds.items()) or "none"
        provenance = (f"code {esc(run.code_version or '?')}<br>host {esc(run.host or '?')}"
                      + text_block(json.dumps(run.packages, indent=1, sort_keys=True),
                                   fold=True, label="packages"))
        links = " · ".join([
            link(url("/episodes", run=run.run_id), "episodes", **{"class": "run-link"}),
            link(url("/episodes", run=run.run_id, success="0"), "failures"),
            link(url("/leaderboard", run=run.run_id), "leaderboard")])
        rows.append([
            f"<b>{esc(run.run_id)}</b><br>{links}",
            esc(what) + text_block(json.dumps(config, indent=1, sort_keys=True), fold=True,
                                   label="config"),
            provenance, esc(_when(run.created_at)),
            f"{_progress(run)}<br>{statuses}<br>"
            f"last episode {esc(_when(run.last_finished_at))}",
            kinds])
    return table(["run", "config", "provenance", "started", "episodes", "errors by kind"],
                 rows, id="runs")


# -- leaderboard ----------------------------------------------------------------------------
def _task_table(run: str, suite: str, task_type: str, tasks: TaskOutcomes) -> str:
    """The drill-down's last level: each task of `task_type`, each policy's successes."""
    rows = []
    for task in tasks.tasks:
        cells = [link(url("/episodes", run=run, suite=suite, task=task), task,
                      **{"class": "task-link"})]
        for policy in tasks.policies:
            n, won = tasks.counts.get((task, policy), (0, 0))
            cells.append(link(url("/episodes", run=run, suite=suite, task=task,
                                  policy=policy), f"{won}/{n}") if n else "—")
        rows.append(cells)
    return (f"<h2>{esc(suite)} / {esc(task_type)} by task (successes / episodes)</h2>"
            + table(["task", *tasks.policies], rows, id="by-task"))


def leaderboard_page(board: Board | None, choices: dict[str, list[str]], run: str, suite: str,
                     task_type: str = "", tasks: TaskOutcomes | None = None,
                     status_url: str = "") -> str:
    """`board.cells`: `harness.report.leaderboard.format_row` of each row (the CLI's strings);
    None while it is computed (a placeholder the page's script polls `status_url` for).
    Drill-down: a suite row opens the suite's task types, a task type its tasks."""
    form = (f'<form class="filters" method="get" action="/leaderboard">'
            f'{select("run", choices["run"], run)}{select("suite", choices["suite"], suite)}'
            f"</form>")
    crumbs = [link(url("/leaderboard", run=run), "all suites")]
    if suite:
        crumbs.append(link(url("/leaderboard", run=run, suite=suite), suite))
    if suite and task_type:
        crumbs.append(esc(task_type))
    body = form + '<p id="crumbs">' + " › ".join(crumbs) + "</p>"
    if board is None:
        return body + (f'<p id="computing" data-status="{esc(status_url)}">Computing the '
                       "leaderboard (the bootstraps and tests of <code>harness leaderboard"
                       "</code>); this page reloads itself when the numbers are ready.</p>")
    if board.message:
        return body + f"<p>{esc(board.message)}</p>"
    rows = []
    for row in board.cells:
        row_suite, policy = row[0], row[1]
        rows.append([link(url("/leaderboard", run=run, suite=row_suite), row_suite,
                          **{"class": "suite-link"}),
                     link(url("/episodes", run=run, suite=row_suite, policy=policy), policy),
                     *(esc(c) for c in row[2:])])
    body += table(board.header, rows, id="leaderboard")
    body += "".join(f'<p class="notes">{esc(line)}</p>' for line in board.notes)
    by_type = board.by_task_type
    if by_type is not None and not by_type.empty:
        body += f"<h2>{esc(suite)} by task type</h2>" + table(
            ["task type", "policy", "episodes", "successes", "success %"],
            ([link(url("/leaderboard", run=run, suite=suite, task_type=r.task_type),
                   r.task_type, **{"class": "task-type-link"}),
              link(url("/episodes", run=run, suite=suite, task_type=r.task_type,
                       policy=r.policy), r.policy), str(r.n), str(r.successes),
              f"{100 * r.successes / r.n:.1f}"] for r in by_type.itertuples()),
            id="by-task-type")
    if tasks is not None:
        body += _task_table(run, suite, task_type, tasks)
    body += ("<details><summary>Markdown (as <code>harness leaderboard --format markdown</code>"
             f')</summary><pre class="text" id="markdown">{esc(board.markdown)}</pre></details>')
    return body


# -- episodes -------------------------------------------------------------------------------
def episodes_page(page: EpisodePage, choices: dict[str, list[str]]) -> str:
    selected = page.filter
    form = ['<form class="filters" method="get" action="/episodes">',
            select("run", choices["run"], selected.run),
            select("policy", choices["policy"], selected.policy),
            select("suite", choices["suite"], selected.suite),
            select("task_type", choices["task_type"], selected.task_type),
            select("status", choices["status"], selected.status),
            select("success", ["1", "0"], selected.success,
                   labels={"1": "successes", "0": "failures"}),
            select("flag", list(FLAGS), selected.flag),
            f'<label>search <input type="search" name="q" id="f-q" value="{esc(selected.q)}">'
            "</label><button type=\"submit\">apply</button>",
            link("/episodes", "clear"), "</form>"]
    rows = [[link(episode_url(r.run_id, r), f"{r.task_id} / seed {r.eval_seed} / "
                  f"sample {r.sample}", **{"class": "episode-link"}),
             esc(r.run_id), esc(r.policy), esc(r.suite), esc(r.task_type), _outcome(r),
             number(r.score), number(r.total_reward), str(r.n_steps), str(r.n_invalid),
             "yes" if r.truncated else ""] for r in page.rows]
    first = (selected.page - 1) * page.page_size + 1 if page.total else 0
    last = (selected.page - 1) * page.page_size + len(page.rows)
    summary = f'<p id="count">{page.total} episodes; showing {first}–{last}</p>'
    pager = ['<p class="pager">']
    if selected.page > 1:
        pager.append(link("/episodes?" + selected.query_string(page=selected.page - 1),
                          "‹ previous", id="prev"))
    pager.append(f"<span>page {selected.page} of {page.n_pages}</span>")
    if selected.page < page.n_pages:
        pager.append(link("/episodes?" + selected.query_string(page=selected.page + 1),
                          "next ›", id="next"))
    pager.append("</p>")
    return ("".join(form) + summary + table(
        ["episode", "run", "policy", "suite", "task type", "outcome", "score", "reward",
         "steps", "invalid", "truncated"], rows, id="episodes") + "".join(pager))


# -- one episode ----------------------------------------------------------------------------
def _info(info: dict) -> str:
    return text_block(json.dumps(info, indent=1, sort_keys=True, default=str), fold=True,
                      label="info")


def _step(step: StepRecord) -> str:
    end = " · terminated" if step.terminated else (" · truncated" if step.truncated else "")
    parts = [f'<section class="step" id="step-{int(step.t)}"><h3>step {int(step.t)} · reward '
             f"{number(float(step.reward))}{end}</h3>",
             '<div class="label">observation</div>', text_block(step.observation),
             '<div class="label">action</div>', text_block(step.action)]
    if step.raw_output != step.action:
        parts += ['<div class="label">raw output</div>', text_block(step.raw_output)]
    parts += [_info(step.info), "</section>"]
    return "".join(parts)


def _message(message: object) -> str:
    if not isinstance(message, dict):
        return text_block(json.dumps(message, default=str))
    content = message.get("content", "")
    if not isinstance(content, str):  # a list of content parts
        content = json.dumps(content, indent=1, default=str)
    return (f'<div class="label">{esc(message.get("role", "?"))}</div>'
            + text_block(content))


def _turn(n: int, turn: TurnRecord) -> str:
    """One model turn: the messages sent (folded as a whole, each long one folded again),
    then the raw reply, with its token counts and latency."""
    unparsed = " · <span class=\"fail\">no action read from the reply</span>" \
        if not turn.parsed else ""
    messages = "".join(_message(m) for m in turn.messages)
    return (f'<section class="turn" id="turn-{n}"><h3>turn {n} · '
            f'{link(f"#step-{int(turn.t)}", f"step {int(turn.t)}")} · {int(turn.prompt_tokens)} '
            f"prompt tokens, {int(turn.completion_tokens)} completion tokens · "
            f"{float(turn.latency_s):.3f} s{unparsed}</h3>"
            f'<details class="fold prompt"><summary>prompt: {len(turn.messages)} messages'
            f"</summary>{messages}</details>"
            f'<div class="label">reply</div><div class="reply">{text_block(turn.raw_output)}'
            "</div></section>")


def _turns(turns: Sequence[TurnRecord]) -> str:
    if not turns:
        return '<h2>model turns</h2><p id="no-turns">No model turns stored.</p>'
    return (f'<h2>model turns</h2><div id="turns">'
            + "".join(_turn(n, turn) for n, turn in enumerate(turns)) + "</div>")


def episode_page(run_id: str, episode: EpisodeDetail) -> str:
    r = episode.row
    facts = [("run", link(url("/episodes", run=run_id), run_id)),
             ("policy", link(url("/episodes", run=run_id, policy=r.policy), r.policy)),
             ("suite", esc(r.suite)), ("task", f"{esc(r.task_id)} ({esc(r.task_type)}, "
                                               f"{esc(r.split)})"),
             ("eval seed / sample", f"{r.eval_seed} / {r.sample}"),
             ("train seed", esc(episode.train_seed)), ("outcome", _outcome(r)),
             ("score", number(r.score)), ("total reward", number(r.total_reward)),
             ("steps", f"{r.n_steps} ({r.n_invalid} invalid)"),
             ("tokens", f"{episode.prompt_tokens} prompt, {episode.completion_tokens} completion"),
             ("model latency", f"{episode.model_latency_s:.3f} s over the turns; "
                               f"{episode.retries} retries"),
             ("wall time", f"{r.wall_s:.3f} s")]
    body = [table(["", ""], ([f"<b>{esc(k)}</b>", v] for k, v in facts), id="facts")]
    if episode.others:
        body.append('<p id="compare-links">compare with: ' + " · ".join(
            link(url("/compare", run=run_id, a=r.policy, b=other, suite=r.suite,
                     task=r.task_id, seed=r.eval_seed, sample=r.sample), other,
                 **{"class": "compare-link"}) for other in episode.others) + "</p>")
    body.append(text_block(json.dumps(episode.provenance, indent=1, sort_keys=True,
                                      default=str), fold=True, label="policy provenance"))
    if episode.error:
        body.append(f'<h2>error</h2><div id="error">{text_block(episode.error, fold=False)}'
                    "</div>")
    body.append('<h2>steps</h2><button type="button" class="expand">expand all</button>')
    body += [_step(step) for step in episode.steps] or ["<p>No steps stored.</p>"]
    body.append('<h2>final observation</h2><div id="final">'
                + text_block(episode.final_observation) + "</div>")
    body.append(_turns(episode.turns))
    return "".join(body)


# -- compare --------------------------------------------------------------------------------
def compare_form(choices: dict[str, list[str]], run: str, a: str, b: str, suite: str) -> str:
    return ('<form class="filters" method="get" action="/compare">'
            f'{select("run", choices["run"], run)}'
            f'{select("a", choices["policy"], a, any_label="policy A")}'
            f'{select("b", choices["policy"], b, any_label="policy B")}'
            f'{select("suite", choices["suite"], suite)}</form>')


def paired_table(run_id: str, outcomes: PairedOutcomes, suite: str) -> str:
    a, b = outcomes.a, outcomes.b
    if not outcomes.n:
        return f"<p>{esc(a)} and {esc(b)} share no episode in run {esc(run_id)}.</p>"
    count = outcomes.counts.get
    grid = table([f"{a} \\ {b}", "success", "failure"], [
        ["<b>success</b>", str(count((True, True), 0)), str(count((True, False), 0))],
        ["<b>failure</b>", str(count((False, True), 0)), str(count((False, False), 0))]],
        id="paired")
    rows = [[link(url("/compare", run=run_id, a=a, b=b, suite=s, task=t, seed=e, sample=m),
                  f"{s} / {t} / seed {e} / sample {m}"),
             esc(a if won else b)] for s, t, e, m, won in outcomes.discordant]
    listing = table(["episode pair", "only this one succeeded"], rows, id="discordant") \
        if rows else "<p>No discordant pair.</p>"
    return (f"<h2>Paired outcomes on {outcomes.n} shared episodes"
            f"{' of ' + esc(suite) if suite else ''}</h2>{grid}<h3>Discordant pairs</h3>"
            f"{listing}")


def _cell(step: StepRecord | None) -> str:
    if step is None:
        return "<i>(episode over)</i>"
    return ('<div class="label">observation</div>' + text_block(step.observation)
            + '<div class="label">action</div>' + text_block(step.action)
            + f'<div class="label">reward {number(float(step.reward))}</div>')


def side_by_side(run_id: str, a: EpisodeDetail, b: EpisodeDetail, diverge: int | None) -> str:
    heading = (f'<p id="divergence">first divergence at step {diverge}: '
               f'{link("#diverge", "jump")}</p>' if diverge is not None
               else '<p id="divergence">the two trajectories are identical</p>')
    n = max(len(a.steps), len(b.steps))
    rows, classes = [], []
    for t in range(n):
        rows.append([str(t), _cell(a.steps[t] if t < len(a.steps) else None),
                     _cell(b.steps[t] if t < len(b.steps) else None)])
        classes.append("diverge" if t == diverge else "")
    rows.append(["end", _outcome(a.row), _outcome(b.row)])
    rendered = table(["step", a.row.policy, b.row.policy], rows, id="side-by-side",
                     cls="compare", row_classes=classes)
    rendered = rendered.replace('<tr class="diverge">', '<tr class="diverge" id="diverge">', 1)
    return (f"<h2>{esc(a.row.suite)} / {esc(a.row.task_id)} / seed {a.row.eval_seed} / sample "
            f"{a.row.sample}</h2><p>{link(episode_url(run_id, a), a.row.policy)} vs "
            f"{link(episode_url(run_id, b), b.row.policy)}</p>{heading}{rendered}")
