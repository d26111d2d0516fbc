"""The GitHub REST calls of the action, through PyGithub, against GITHUB_API_URL (so GitHub Enterprise
Server and test servers work). Rate limits (403 with x-ratelimit-remaining 0, 429) are waited out and
retried by PyGithub's GithubRetry, which waits through the invocation's retry policy (tests record the
waits instead of sleeping them); other failures become clear errors."""

from __future__ import annotations

from typing import Any

from lvegit.base.errors import GitHubAccessError, GitHubError, UsageError
from lvegit.base.settings import RetryPolicy
from lvegit.github.render import COMMENT_LIMIT, MARKER
from lvegit.github.verify import ChangedFile, PullRequestFacts, action_folders, is_sha, lve_folders

RATE_LIMIT_WAIT = 60.0  # the longest wait for a secondary rate limit to pass
MAX_RETRIES = 5


def _github_retry(policy: RetryPolicy) -> Any:
    """PyGithub's retry (which knows GitHub's rate-limit headers), waiting through `policy`."""
    import github

    class Retry(github.GithubRetry):
        def sleep(self, response: Any = None) -> None:  # urllib3 calls this between attempts
            after = self.get_retry_after(response) if response is not None else None
            policy.pause(after if after else self.get_backoff_time())

    return Retry(total=MAX_RETRIES, secondary_rate_wait=RATE_LIMIT_WAIT, max_rate_limit_wait=RATE_LIMIT_WAIT)


class PullRequests:
    def __init__(self, api_url: str, token: str, repository: str, retry: RetryPolicy) -> None:
        if not token:
            raise UsageError("commenting needs a token: set the github-token input (or GITHUB_TOKEN)")
        import github

        self._github = github.Github(
            auth=github.Auth.Token(token),
            base_url=api_url.rstrip("/"),
            retry=_github_retry(retry),
            per_page=100,
            seconds_between_requests=None,
            seconds_between_writes=None,
            lazy=True,  # no request until one is needed
        )
        self._repository = self._github.get_repo(repository)
        self.repository = repository

    def _call(self, what: str, action: Any) -> Any:
        import github

        try:
            return action()
        except github.UnknownObjectException:
            raise GitHubAccessError(
                f"{what}: not found (404): the pull request is gone, or the token cannot see it"
            ) from None
        except github.GithubException as exc:
            message = exc.data.get("message") if isinstance(exc.data, dict) else exc.data
            if exc.status == 422:
                raise GitHubError(f"{what}: GitHub refused the body (422): {message}") from None
            if exc.status in (401, 403):
                raise GitHubAccessError(
                    f"{what}: not allowed ({exc.status}): {message}; in a fork's pull_request "
                    "run the token is read-only: comment from a workflow_run job"
                ) from None
            raise GitHubError(f"{what}: HTTP {exc.status}: {message}") from None

    def head_sha(self, number: int) -> str:
        pull = self._call(f"pull request #{number}", lambda: self._repository.get_pull(number))
        return str(self._call(f"pull request #{number}", lambda: pull.head.sha))

    def facts(self, number: int) -> PullRequestFacts:
        """The pull request's head, base and changed files, and the folders of its head holding a
        test.json or a local action (from the head's tree: the pull request's files are read as names,
        never run)."""
        what = f"pull request #{number}"
        pull = self._call(what, lambda: self._repository.get_pull(number))
        head, base, base_ref, default = self._call(
            what,
            lambda: (str(pull.head.sha), str(pull.base.sha), pull.base.ref, pull.base.repo.default_branch),
        )
        files = self._call(
            f"files of #{number}",
            lambda: [ChangedFile(f.filename, f.status, f.previous_filename) for f in pull.get_files()],
        )
        total = self._call(what, lambda: int(pull.changed_files))
        tree = self._call(f"tree of {head[:12]}", lambda: self._repository.get_git_tree(head, recursive=True))
        blobs = self._call(f"tree of {head[:12]}", lambda: [e.path for e in tree.tree if e.type == "blob"])
        truncated = self._call(f"tree of {head[:12]}", lambda: bool(tree.truncated))
        folders = None if truncated else lve_folders(blobs)
        actions = action_folders(blobs)
        return PullRequestFacts(head, base, files, len(files) >= total, folders, actions, base_ref, default)

    def pulls_from(self, label: str) -> dict[int, str]:
        """The pull requests from the branch `label` (`owner:branch`), and the branch each is into; closed
        ones too (one closed as soon as its run ended is still a run the comment stage may be following)."""
        return dict(
            self._call(
                f"pull requests from {label}",
                lambda: [(p.number, p.base.ref) for p in self._repository.get_pulls(state="all", head=label)],
            )
        )

    def same_file(self, path: str, commit: str, branch: str) -> bool:
        """Whether `path` is one file (the same blob) at `commit` and at the tip of `branch`; not where
        either has none."""

        def blob(ref: str) -> str | None:
            try:
                found = self._call(
                    f"{path} at {ref[:40]}", lambda: self._repository.get_contents(path, ref=ref)
                )
            except GitHubAccessError:  # 404: no such file there
                return None
            return str(found.sha) if not isinstance(found, list) else None  # a folder is no workflow

        theirs = blob(commit)
        return theirs is not None and theirs == blob(branch)

    def on_branch(self, commit: str, tip: str) -> bool:
        """Whether `commit` (a results file's word) is `tip` or one of its ancestors, by GitHub's compare
        of the two; a commit GitHub does not know is not."""
        if commit == tip:
            return True
        if not is_sha(commit):
            return False
        try:
            status = self._call(
                f"compare {commit[:12]}...{tip[:12]}",
                lambda: str(self._repository.compare(commit, tip).status),
            )
        except GitHubAccessError:
            return False
        return status in ("identical", "ahead")

    def upsert_comment(self, number: int, body: str) -> tuple[str, int]:
        """Create the one verdict comment, or edit it in place: ('created' | 'updated', comment id).

        The comment is found by the hidden marker at its top, among comments written by a bot (a pull
        request's author cannot make lvegit edit their own comment by copying the marker)."""
        if len(body) > COMMENT_LIMIT:
            raise GitHubError(f"the comment is {len(body)} characters, over GitHub's {COMMENT_LIMIT}")
        issue = self._call(f"pull request #{number}", lambda: self._repository.get_issue(number))

        def find() -> Any:
            for comment in issue.get_comments():
                if (comment.body or "").startswith(MARKER) and getattr(comment.user, "type", "") == "Bot":
                    return comment
            return None

        existing = self._call(f"comments of #{number}", find)
        if existing is not None:
            self._call(f"comment {existing.id}", lambda: existing.edit(body))
            return "updated", int(existing.id)
        created = self._call(f"comment on #{number}", lambda: issue.create_comment(body))
        return "created", int(created.id)
