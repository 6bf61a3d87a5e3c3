"""Approvals on the chat page (human in the loop) in Chromium against a live server whose CHAT_APPROVE_TOOLS guards
the subagents' tools: the cards where each call belongs, every decision, Approve all, the composer's refusal, a
reload, two tabs, the keyboard and a phone's width. Screenshots land in test-artifacts/chatui/approvals-*.png."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("playwright.sync_api", reason="Browser tests need the playwright package (requirements-dev.txt)")

from playwright.sync_api import Locator, Page, expect  # noqa: E402

from agentruntime.models import ChatInterrupt, ChatRun  # noqa: E402
from tests.chatui.conftest import PHONE, live_page_server  # noqa: E402
from tests.chatui.support_page import (  # noqa: E402
    RUN_TIMEOUT_MS,
    composer,
    final_answer,
    send,
    subagent,
    thread_id_in_url,
    transcript,
    unnamed_controls,
    wait_for_run_end,
)

# The page against PostgreSQL adds nothing the protocol tests (tests/chat) do not run there already.
pytestmark = [pytest.mark.live, pytest.mark.browser, pytest.mark.no_postgres_pass]
page_server = live_page_server(CHAT_APPROVE_TOOLS="calculator,search_web", CHAT_AGENT_DELAY_SCALE="0.5")
MATH = "Calculate 42 * 17"
BOTH = "Research the abacus, and separately calculate 42 * 17."


def cards(scope: Page | Locator, status: str = "pending") -> Locator:
    return scope.locator(f'section.approval[data-status="{status}"]')


def card_for(scope: Page | Locator, tool: str, status: str = "pending") -> Locator:
    return scope.locator(f'section.approval[data-status="{status}"]:has(.approval-action[data-tool="{tool}"])')


def announced(page: Page) -> Locator:
    return page.locator('.approval-controls [aria-live="polite"]')


def ask(page: Page, base: str, text: str = MATH) -> Locator:
    """Send `text` on a new conversation and return the calculator's waiting card, inside math-whiz's card."""
    page.goto(f"{base}/chat/")
    send(page, text)
    waiting = card_for(subagent(page, "math-whiz"), "calculator")
    expect(waiting).to_be_visible(timeout=RUN_TIMEOUT_MS)
    return waiting


def expect_answer(page: Page, *parts: str) -> None:
    wait_for_run_end(page)
    for part in parts:
        expect(transcript(page).locator("> .transcript-inner > article.msg-ai").last).to_contain_text(
            part, timeout=RUN_TIMEOUT_MS)


def test_a_subagents_call_waits_in_its_card_refuses_new_messages_and_runs_once_approved(base, new_page, shoot):
    page = new_page()
    waiting = ask(page, base)
    math = subagent(page, "math-whiz")
    expect(math).to_have_attribute("data-status", "waiting")
    expect(waiting).to_contain_text('"expression": "42 * 17"')
    for name in ("Approve", "Edit", "Reject", "Respond"):
        expect(waiting.get_by_role("button", name=name, exact=True)).to_be_visible()
    expect(announced(page)).to_have_text("Approval needed: calculator (asked by a subagent).")
    # One call waits: nothing to approve all at once.
    expect(page.get_by_role("button", name="Approve all")).to_have_count(0)

    # The composer says why nothing can be sent, and refuses a message instead of queueing it.
    expect(page.locator(".composer-notice")).to_contain_text("waiting for your approval of a tool call")
    composer(page).fill("Never mind, what is 6 * 7?")
    composer(page).press("Enter")
    expect(page.get_by_role("alert").filter(has_text="Not sent")).to_be_visible()
    expect(composer(page)).to_have_value("Never mind, what is 6 * 7?")
    expect(transcript(page).get_by_text("Never mind, what is 6 * 7?")).to_have_count(0)
    shoot(page, "approvals-desktop-subagent-waiting")

    composer(page).fill("")
    waiting.get_by_role("button", name="Approve", exact=True).click()
    decided = card_for(math, "calculator", "answered")
    expect(decided).to_contain_text("Approved: the tool ran as asked.")
    expect(announced(page)).to_have_text("calculator: Approved.")
    expect_answer(page, "42 * 17 = 714")
    expect(page.locator(".composer-notice")).to_have_count(0)
    shoot(page, "approvals-desktop-subagent-approved")

    # The decision is part of the conversation's history.
    page.reload()
    expect(card_for(subagent(page, "math-whiz"), "calculator", "answered")).to_contain_text("Approved")
    expect(cards(page)).to_have_count(0)


def test_asking_before_every_tool_puts_the_coordinators_call_in_its_own_flow(base, new_page, shoot):
    page = new_page()
    page.goto(f"{base}/chat/")
    switch = page.get_by_role("switch", name="Ask before using tools")
    expect(switch).not_to_be_checked()
    switch.check()
    expect(page.locator(".approval-hint")).to_contain_text("asks you before every tool call")
    send(page, MATH)

    # The coordinator's delegation waits in the coordinator's turn, not inside a subagent's card.
    delegation = transcript(page).locator("article.msg-ai > .approval-list").locator(
        'section.approval[data-status="pending"]')
    expect(delegation).to_be_visible(timeout=RUN_TIMEOUT_MS)
    expect(delegation.locator('.approval-action[data-tool="task"]')).to_be_visible()
    expect(delegation).to_contain_text('"subagent_type": "math-whiz"')
    expect(cards(subagent(page, "math-whiz"))).to_have_count(0)
    shoot(page, "approvals-desktop-coordinator-waiting")
    delegation.get_by_role("button", name="Approve", exact=True).click()

    # The turn's list holds for the subagent it started: its calculator asks in its own card.
    calculation = card_for(subagent(page, "math-whiz"), "calculator")
    expect(calculation).to_be_visible(timeout=RUN_TIMEOUT_MS)
    calculation.get_by_role("button", name="Approve", exact=True).click()
    expect_answer(page, "42 * 17 = 714")
    expect(transcript(page).locator("article.msg-ai > .approval-list section.approval")).to_contain_text("Approved")

    # The switch is the thread's: still on after a reload.
    page.reload()
    expect(page.get_by_role("switch", name="Ask before using tools")).to_be_checked()
    expect(cards(page, "answered")).to_have_count(2)


def test_an_edit_with_invalid_json_is_refused_in_the_form_and_a_valid_edit_runs(base, new_page, shoot):
    page = new_page()
    waiting = ask(page, base)
    waiting.get_by_role("button", name="Edit", exact=True).click()
    arguments = waiting.get_by_label("Arguments (JSON)")
    expect(arguments).to_be_focused()
    assert json.loads(arguments.input_value()) == {"expression": "42 * 17"}

    arguments.fill('{"expression": 6 * 7')
    waiting.get_by_role("button", name="Run with these arguments").click()
    expect(waiting.get_by_role("alert")).to_contain_text("This is not valid JSON")
    expect(arguments).to_have_attribute("aria-invalid", "true")
    arguments.fill('["6 * 7"]')
    waiting.get_by_role("button", name="Run with these arguments").click()
    expect(waiting.get_by_role("alert")).to_contain_text("must be a JSON object")
    shoot(page, "approvals-desktop-edit-invalid")
    # Nothing was sent: the thread still waits.
    assert ChatInterrupt.objects.filter(answered_at__isnull=False).count() == 0
    expect(waiting).to_have_attribute("data-status", "pending")

    arguments.fill('{"expression": "6 * 7"}')
    waiting.get_by_role("button", name="Run with these arguments").click()
    decided = card_for(subagent(page, "math-whiz"), "calculator", "answered")
    expect(decided).to_contain_text("Edited: the tool ran with new arguments.")
    expect(decided.locator(".tool-part").filter(has_text="Arguments it ran with")).to_contain_text('"6 * 7"')
    expect_answer(page, "6 * 7 = 42")
    assert "714" not in final_answer(page)


def test_a_rejection_carries_its_reason_to_the_agent(base, new_page, shoot):
    page = new_page()
    waiting = ask(page, base)
    waiting.get_by_role("button", name="Reject", exact=True).click()
    waiting.get_by_label("Reason for rejecting (the agent sees it)").fill("no calculators today")
    shoot(page, "approvals-desktop-reject-form")
    waiting.get_by_role("button", name="Reject the call").click()
    decided = card_for(subagent(page, "math-whiz"), "calculator", "answered")
    expect(decided).to_contain_text("Rejected: “no calculators today”")
    expect_answer(page, "you rejected the call (no calculators today)")
    assert "714" not in final_answer(page)


def test_a_response_stands_in_for_the_tools_result(base, new_page):
    page = new_page()
    waiting = ask(page, base)
    waiting.get_by_role("button", name="Respond", exact=True).click()
    send_answer = waiting.get_by_role("button", name="Send the answer")
    send_answer.click()
    expect(waiting.get_by_role("alert")).to_contain_text("Write the answer")
    waiting.get_by_label("Your answer, given to the agent instead of the tool's result").fill("713")
    send_answer.click()
    expect(card_for(subagent(page, "math-whiz"), "calculator", "answered")).to_contain_text(
        "Answered instead of the tool: “713”")
    expect_answer(page, "42 * 17 = 713")


def test_approve_all_answers_two_waiting_subagents_with_one_command(base, new_page, shoot):
    page = new_page()
    page.goto(f"{base}/chat/")
    answers = []
    page.on("request", lambda request: answers.append(request.post_data)
            if request.method == "POST" and "input.respond" in (request.post_data or "") else None)
    send(page, BOTH)
    expect(card_for(subagent(page, "researcher"), "search_web")).to_be_visible(timeout=RUN_TIMEOUT_MS)
    expect(card_for(subagent(page, "math-whiz"), "calculator")).to_be_visible(timeout=RUN_TIMEOUT_MS)
    expect(page.locator(".composer-notice")).to_contain_text("approval of 2 tool calls")
    shoot(page, "approvals-desktop-two-waiting")

    page.get_by_role("button", name="Approve all (2)").click()
    expect(cards(page, "answered")).to_have_count(2)
    expect(announced(page)).to_have_text("Approved all 2 tool calls.")
    expect_answer(page, "42 * 17 = 714", "abacus")
    (command,) = answers
    responses = json.loads(command)["params"]["responses"]
    assert sorted(len(r["namespace"]) for r in responses) == [1, 1]
    assert ChatRun.objects.filter(thread_id=thread_id_in_url(page)).count() == 2


def test_a_reload_while_waiting_brings_the_cards_back_and_they_still_answer(base, new_page, shoot):
    page = new_page()
    ask(page, base)
    page.reload()
    waiting = card_for(subagent(page, "math-whiz"), "calculator")
    expect(waiting).to_be_visible(timeout=RUN_TIMEOUT_MS)
    expect(page.locator(".composer-notice")).to_contain_text("waiting for your approval")
    expect(announced(page)).to_have_text("Approval needed: calculator (asked by a subagent).")
    shoot(page, "approvals-desktop-after-reload")
    waiting.get_by_role("button", name="Approve", exact=True).click()
    expect_answer(page, "42 * 17 = 714")


def test_two_tabs_answer_once_and_the_late_one_shows_the_error(base, new_page, shoot):
    first = new_page()
    ask(first, base)
    thread_id = thread_id_in_url(first)
    second = new_page()
    # The second tab has not heard of the first tab's answer yet: it keeps the approvals it loaded first.
    frozen: dict = {}

    def stale_approvals(route):
        if "body" not in frozen:
            frozen["body"] = route.fetch().text()
        route.fulfill(status=200, content_type="application/json", body=frozen["body"])

    second.route("**/approvals", stale_approvals)
    second.goto(f"{base}/chat/?thread={thread_id}")
    late = card_for(subagent(second, "math-whiz"), "calculator")
    expect(late).to_be_visible(timeout=RUN_TIMEOUT_MS)

    card_for(subagent(first, "math-whiz"), "calculator").get_by_role("button", name="Approve", exact=True).click()
    expect_answer(first, "42 * 17 = 714")
    late.get_by_role("button", name="Approve", exact=True).click()
    expect(late.get_by_role("alert")).to_contain_text("already answered, in another tab or window")
    # Said once, in the card: not again as a failed run.
    expect(second.locator(".error-box")).to_have_count(1)
    shoot(second, "approvals-desktop-two-tabs-late")

    # One answer, one resuming run: nothing ran twice.
    assert ChatRun.objects.filter(thread_id=thread_id).count() == 2
    assert ChatInterrupt.objects.filter(thread_id=thread_id, answered_at__isnull=False).count() == 1
    # Once it hears the truth, the late tab shows the first tab's decision.
    second.unroute("**/approvals")
    second.reload()
    expect(card_for(subagent(second, "math-whiz"), "calculator", "answered")).to_contain_text("Approved")


def focus_by_tab(page: Page, name: str, *, limit: int = 60) -> None:
    """Press Tab until the focused element is the button or field named `name`."""
    for _ in range(limit):
        page.keyboard.press("Tab")
        focused = page.evaluate("() => (document.activeElement?.textContent || '').trim()")
        if focused == name:
            return
    raise AssertionError(f"Tab never reached {name!r}")


def test_an_approval_can_be_answered_with_the_keyboard_only(base, new_page, shoot):
    page = new_page()
    waiting = ask(page, base)
    page.locator("body").focus()
    focus_by_tab(page, "Edit")
    page.keyboard.press("Enter")
    expect(waiting.get_by_label("Arguments (JSON)")).to_be_focused()
    page.keyboard.press("Escape")
    expect(waiting.get_by_label("Arguments (JSON)")).to_have_count(0)

    focus_by_tab(page, "Reject")
    page.keyboard.press("Enter")
    reason = waiting.get_by_label("Reason for rejecting (the agent sees it)")
    expect(reason).to_be_focused()
    page.keyboard.type("typed without a mouse")
    page.keyboard.press("Tab")
    expect(waiting.get_by_role("button", name="Reject the call")).to_be_focused()
    shoot(page, "approvals-desktop-keyboard")
    page.keyboard.press("Enter")
    # The decided card keeps the focus its buttons had.
    expect(card_for(subagent(page, "math-whiz"), "calculator", "answered")).to_be_focused()
    expect_answer(page, "you rejected the call (typed without a mouse)")
    assert page.problems == []


def test_approvals_read_and_answer_at_375_px(base, new_page, shoot):
    page = new_page(viewport=PHONE)
    page.goto(f"{base}/chat/")
    send(page, BOTH)
    waiting = card_for(subagent(page, "math-whiz"), "calculator")
    expect(waiting).to_be_visible(timeout=RUN_TIMEOUT_MS)
    expect(page.get_by_role("button", name="Approve all (2)")).to_be_visible()
    assert unnamed_controls(page) == []
    overflow = page.evaluate("() => document.scrollingElement.scrollWidth - window.innerWidth")
    assert overflow <= 0
    box = waiting.bounding_box()
    assert box and box["x"] >= 0 and box["x"] + box["width"] <= PHONE["width"]
    shoot(page, "approvals-phone-two-waiting")

    waiting.get_by_role("button", name="Edit", exact=True).click()
    waiting.get_by_label("Arguments (JSON)").fill("{")
    waiting.get_by_role("button", name="Run with these arguments").click()
    expect(waiting.get_by_role("alert")).to_contain_text("This is not valid JSON")
    waiting.scroll_into_view_if_needed()
    shoot(page, "approvals-phone-edit-invalid")
    waiting.get_by_role("button", name="Cancel").click()
    page.get_by_role("button", name="Approve all (2)").click()
    expect_answer(page, "42 * 17 = 714")
    shoot(page, "approvals-phone-answered")


def test_one_request_about_two_delegations_takes_a_decision_for_each_then_sends_both(base, new_page, shoot):
    page = new_page()
    page.goto(f"{base}/chat/")
    page.get_by_role("switch", name="Ask before using tools").check()
    send(page, BOTH)
    request = transcript(page).locator('article.msg-ai > .approval-list > section.approval[data-status="pending"]')
    expect(request).to_be_visible(timeout=RUN_TIMEOUT_MS)
    expect(request.locator(".approval-action")).to_have_count(2)
    send_both = request.get_by_role("button", name="Send the 2 decisions")
    expect(send_both).to_be_disabled()
    research, math = request.locator(".approval-action").nth(0), request.locator(".approval-action").nth(1)
    for name in ("researcher", "math-whiz"):
        expect(subagent(page, name)).to_have_attribute("data-status", "waiting")
    expect(research).to_contain_text('"subagent_type": "researcher"')
    research.get_by_role("button", name="Approve", exact=True).click()
    math.get_by_role("button", name="Reject", exact=True).click()
    math.get_by_label("Reason for rejecting (the agent sees it)").fill("no math today")
    math.get_by_role("button", name="Reject the call").click()
    expect(math).to_contain_text("Your choice: rejected (“no math today”)")
    shoot(page, "approvals-desktop-two-decisions")
    send_both.click()

    decided = transcript(page).locator('article.msg-ai > .approval-list > section.approval[data-status="answered"]')
    expect(decided).to_contain_text("Approved: the tool ran as asked.")
    expect(decided).to_contain_text("Rejected: “no math today”")
    # The approved researcher then asks before its own search, in its card.
    card_for(subagent(page, "researcher"), "search_web").get_by_role("button", name="Approve", exact=True).click(
        timeout=RUN_TIMEOUT_MS)
    expect_answer(page, "you rejected the call (no math today)", "abacus")


def test_an_answer_the_server_refuses_shows_its_reason_in_the_card_and_can_be_given_again(base, new_page):
    page = new_page()
    waiting = ask(page, base)

    # The server's review config is the judge: an answer it does not allow comes back invalid_argument.
    def disallowed(route):
        body = json.loads(route.request.post_data or "{}")
        if body.get("method") != "input.respond":
            return route.continue_()
        body["params"]["response"]["decisions"] = [{"type": "ignore"}]
        route.continue_(post_data=json.dumps(body))

    page.route("**/commands", disallowed)
    waiting.get_by_role("button", name="Approve", exact=True).click()
    expect(waiting.get_by_role("alert")).to_contain_text("The server refused this answer: Decision 0 of interrupt")
    expect(waiting).to_have_attribute("data-status", "pending")
    page.unroute("**/commands")
    waiting.get_by_role("button", name="Approve", exact=True).click()
    expect_answer(page, "42 * 17 = 714")


def test_a_new_thread_asks_for_its_approvals_only_once_it_exists(base, new_page):
    page = new_page()
    answers: list[int] = []
    page.on("response", lambda response: answers.append(response.status) if "/approvals" in response.url else None)
    page.goto(f"{base}/chat/")
    # The thread is made by its first run on the server: asked for earlier, its approvals were a 404.
    with page.expect_response(lambda response: "/approvals" in response.url) as first:
        send(page, "Hello")
    assert first.value.status == 200
    wait_for_run_end(page)
    assert 404 not in answers, answers
