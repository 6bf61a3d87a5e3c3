"""The domain errors of core.exceptions and the REST answer each one gets (core.exception_handler)."""

from __future__ import annotations

from core.exception_handler import handle_exception
from core.exceptions import NotFound, ServiceError, ServiceUnavailable, TooManyRequests


class Gone(ServiceError, status=410, detail="Gone for good.", retry_after=7):
    """A kind of error declared as the core ones are."""


def test_a_kind_of_error_names_its_status_message_and_retry_after_in_its_class_statement():
    error = Gone()
    assert (error.status_code, error.detail, error.retry_after_seconds) == (410, "Gone for good.", 7)


def test_a_raised_error_may_replace_the_message_and_the_retry_after():
    error = Gone("Moved elsewhere.", retry_after_seconds=30)
    assert (error.detail, error.retry_after_seconds) == ("Moved elsewhere.", 30)


def test_a_subclass_keeps_what_its_class_statement_does_not_name():
    class Hidden(NotFound, detail="Nothing here."): ...

    assert (Hidden.status_code, Hidden.default_detail, Hidden.retry_after_seconds) == (404, "Nothing here.", None)


def test_only_errors_that_can_be_retried_answer_with_retry_after():
    answers = {type(error).__name__: handle_exception(error, {})
               for error in (NotFound(), TooManyRequests(), ServiceUnavailable(), Gone())}
    assert {name: (response.status_code, response.headers.get("Retry-After")) for name, response in answers.items()} \
        == {"NotFound": (404, None), "TooManyRequests": (429, "1"), "ServiceUnavailable": (503, "5"),
            "Gone": (410, "7")}
    assert answers["NotFound"].data == {"detail": "Not Found"}
