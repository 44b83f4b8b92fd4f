"""A whole flow through the Python client that openapi-python-client generates from
/api/openapi.json (scripts/check-openapi generates it and runs this): an employer registers, logs
in, creates a company and a job; a candidate registers, logs in, uploads a résumé (a
multipart/form-data body, as the document describes it) and applies with it; the employer
downloads it and moves the application; the candidate withdraws it. The client raises on any status the document does
not list, and every answer must parse into the type the document gives it.

    PYTHONPATH=<folder holding jobboard_client> python openapi_client_flow.py http://127.0.0.1:8000
"""

import io
import sys
import typing
import uuid

import attrs
import jobboard_client.models
from jobboard_client import AuthenticatedClient, Client
from jobboard_client.api.accounts import create_token, register
from jobboard_client.api.applications import (
    apply_to_job,
    change_application_status,
    get_application_history,
    download_application_resume,
    withdraw_application,
)
from jobboard_client.api.companies import create_company, get_company
from jobboard_client.api.resumes import list_resumes, upload_resume
from jobboard_client.api.jobs import create_job, get_job, search_jobs
from jobboard_client.models import (
    ApplicationOut,
    ApplicationStatus,
    ApplyIn,
    CompanyIn,
    CompanyOut,
    EmploymentType,
    HistoryOut,
    JobIn,
    JobList,
    JobOut,
    Problem,
    RegisterIn,
    ResumeOut,
    ResumeUpload,
    Role,
    StatusIn,
    TokenIn,
    TokenOut,
    UserOut,
)
from jobboard_client.types import File, Unset

BASE = sys.argv[1] if len(sys.argv) > 1 else "http://127.0.0.1:8000"
PASSWORD = "correct horse battery staple"


def expect(response, status, kind):
    """The response has `status` and its body parsed as `kind`."""
    assert response.status_code == status, (
        f"expected {status}, got {response.status_code}: {response.content!r}"
    )
    assert isinstance(response.parsed, kind), (
        f"expected a {kind.__name__}, parsed {type(response.parsed).__name__}"
    )
    return response.parsed


def no_unset(model):
    """Every field of a response model is present (optional ones as null), never `Unset`."""
    for field in attrs.fields(type(model)):
        value = getattr(model, field.name)
        assert not isinstance(value, Unset), f"{type(model).__name__}.{field.name} may be missing"


def account(anonymous, role):
    email = f"{role.value}-{uuid.uuid4().hex[:12]}@example.com"
    body = RegisterIn(email=email, password=PASSWORD, name=f"A {role.value}", role=role)
    user = expect(register.sync_detailed(client=anonymous, body=body), 201, UserOut)
    assert user.role == role
    token = expect(
        create_token.sync_detailed(client=anonymous, body=TokenIn(email=email, password=PASSWORD)),
        200,
        TokenOut,
    )
    return AuthenticatedClient(
        base_url=BASE, token=token.access_token, raise_on_unexpected_status=True
    )


def main():
    # Enumerated inputs are typed by their enums, not as plain strings.
    # (Models name each other in annotations that only the models module resolves.)
    models = vars(jobboard_client.models)
    assert typing.get_type_hints(RegisterIn, localns=models)["role"] is Role
    assert typing.get_type_hints(JobIn, localns=models)["employment_type"] is EmploymentType
    assert typing.get_type_hints(StatusIn, localns=models)["status"] is ApplicationStatus

    anonymous = Client(base_url=BASE, raise_on_unexpected_status=True)
    employer = account(anonymous, Role.EMPLOYER)

    company = expect(
        create_company.sync_detailed(client=employer, body=CompanyIn(name="Acme")), 201, CompanyOut
    )
    no_unset(company)
    assert company.website is None and company.description is None

    job = expect(
        create_job.sync_detailed(
            client=employer,
            body=JobIn(
                company_id=company.id,
                title="Senior Rust Engineer",
                description="Build the API",
                location="Berlin",
                remote=True,
                employment_type=EmploymentType.FULL_TIME,
            ),
        ),
        201,
        JobOut,
    )
    no_unset(job)
    assert job.salary_min is None and job.employment_type == EmploymentType.FULL_TIME

    found = expect(
        search_jobs.sync_detailed(
            client=anonymous, q="engineer", employment_type=EmploymentType.FULL_TIME, page_size=100
        ),
        200,
        JobList,
    )
    assert [j.id for j in found.items] == [job.id]
    assert found.total == 1
    expect(get_job.sync_detailed(job.id, client=anonymous), 200, JobOut)

    candidate = account(anonymous, Role.CANDIDATE)
    cv = "Jane Doe\nRust engineer, Berlin\n".encode()
    upload = File(payload=io.BytesIO(cv), file_name="Jane Doe CV.txt", mime_type="text/plain")
    resume = expect(
        upload_resume.sync_detailed(client=candidate, body=ResumeUpload(file=upload)),
        201,
        ResumeOut,
    )
    no_unset(resume)
    assert resume.filename == "Jane Doe CV.txt" and resume.size == len(cv), resume
    assert resume.content_type == "text/plain; charset=utf-8", resume
    listed = list_resumes.sync_detailed(client=candidate)
    assert listed.status_code == 200 and [r.id for r in listed.parsed] == [resume.id]
    application = expect(
        apply_to_job.sync_detailed(job.id, client=candidate, body=ApplyIn(resume_id=resume.id)),
        201,
        ApplicationOut,
    )
    no_unset(application)
    assert application.status == ApplicationStatus.SUBMITTED
    assert application.cover_letter is None
    assert application.resume.id == resume.id and application.answers == []
    download = download_application_resume.sync_detailed(application.id, client=employer)
    assert download.status_code == 200 and download.content == cv, download.content

    moved = expect(
        change_application_status.sync_detailed(
            application.id,
            client=employer,
            body=StatusIn(status=ApplicationStatus.REVIEWING),
            idempotency_key=f"move-{uuid.uuid4()}",
        ),
        200,
        ApplicationOut,
    )
    assert moved.status == ApplicationStatus.REVIEWING

    # A malformed Idempotency-Key (over 255 characters) is a documented 400, parsed as a problem.
    refused = expect(
        withdraw_application.sync_detailed(
            application.id, client=candidate, idempotency_key="k" * 256
        ),
        400,
        Problem,
    )
    assert refused.type_ == "/problems/invalid-idempotency-key"
    key = f"withdraw-{uuid.uuid4()}"
    withdrawn = expect(
        withdraw_application.sync_detailed(application.id, client=candidate, idempotency_key=key),
        200,
        ApplicationOut,
    )
    assert withdrawn.status == ApplicationStatus.WITHDRAWN
    replay = withdraw_application.sync_detailed(
        application.id, client=candidate, idempotency_key=key
    )
    expect(replay, 200, ApplicationOut)
    assert replay.headers.get("idempotent-replayed") == "true"

    history = get_application_history.sync_detailed(application.id, client=candidate)
    assert history.status_code == 200
    assert all(isinstance(h, HistoryOut) for h in history.parsed)
    for h in history.parsed:
        no_unset(h)
    assert [(h.old_status, h.new_status) for h in history.parsed] == [
        (None, ApplicationStatus.SUBMITTED),
        (ApplicationStatus.SUBMITTED, ApplicationStatus.REVIEWING),
        (ApplicationStatus.REVIEWING, ApplicationStatus.WITHDRAWN),
    ]
    # Each row is an event: the confirmation of the application, then each move.
    ids = [h.event_id for h in history.parsed]
    assert all(isinstance(i, str) for i in ids) and len(set(ids)) == 3, ids

    # A bad token on a public endpoint is a documented 401.
    stranger = AuthenticatedClient(base_url=BASE, token="not-a-token", raise_on_unexpected_status=True)
    expect(get_company.sync_detailed(company.id, client=stranger), 401, Problem)
    expect(search_jobs.sync_detailed(client=stranger), 401, Problem)

    print("client flow: register, token, company, job, search, upload, apply, download, move, withdraw: ok")


if __name__ == "__main__":
    main()
