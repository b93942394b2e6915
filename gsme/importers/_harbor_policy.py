"""Harbor's exception policy table: which recorded exceptions leave a trial's reward valid.

Harbor (``harbor.models.trial.error_policy``) gives every exception type a trial can
record a ``FailureCause``; a trial's reward is a valid measurement
(``TrialResult.reward_valid``) only when every exception it recorded, its own and its
steps', has a cause of the agent's own making (:data:`VALID_CAUSES`: it used up its
budget, or refused the task). gsme's class of a Harbor exception follows that:
``"agent"`` (scored) for those, ``"infra"`` (re-run, never scored) for every other type,
an unknown one included (Harbor's ``UNKNOWN_ERROR_POLICY`` is ``unclassified``).

:func:`harbor_failure_classes` reads the installed Harbor's table when Harbor is
importable, else :data:`CAUSES`, a transcription of Harbor :data:`VERSION`'s.

Examples
--------
>>> CAUSES["VerifierTimeoutError"], CAUSES["AgentTimeoutError"]
('verifier_failed', 'agent_exhausted_budget')
>>> len(CAUSES)
57
"""

from __future__ import annotations

from types import MappingProxyType

__all__ = ["CAUSES", "VALID_CAUSES", "VERSION", "harbor_failure_classes"]

VERSION = "0.25.0"
"""The Harbor release :data:`CAUSES` transcribes (PyPI ``harbor`` 0.25.0,
``harbor/models/trial/error_policy.py``)."""

VALID_CAUSES = ("agent_exhausted_budget", "agent_refused_task")
"""The causes whose exceptions leave the reward valid (Harbor's ``ErrorPolicy.reward_valid``)."""

_BY_CAUSE = {
    "sandbox_failed": (
        "EnvironmentStartTimeoutError", "SandboxBuildFailedError", "AgentSetupTimeoutError",
        "HealthcheckError", "SandboxLikelyOutOfMemoryError", "MemoryLimitExceededError",
        "SSHAccessError", "GKEExecStreamClosedError", "GKEPodNotFoundError",
        "RuntimeRequestError", "AddTestsDirError", "DownloadVerifierDirError"),
    "model_provider_failed": (
        "ApiError", "ApiRateLimitError", "ApiInternalServerError", "ApiOverloadedError",
        "ApiConnectionClosedError", "ApiResponseStalledError", "UnknownApiError",
        "NetworkConnectionError", "ApiConnectionError", "ApiUsageLimitError",
        "RateLimitError", "InternalServerError", "ServiceUnavailableError",
        "APIConnectionError", "APIError", "Timeout", "BadRequestError",
        "UnprocessableEntityError", "UnsupportedParamsError", "APIResponseValidationError",
        "BudgetExceededError", "AgentAuthenticationError", "ModelNotFoundError",
        "ApiProviderResourceNotFoundError", "AuthenticationError", "PermissionDeniedError",
        "NotFoundError"),
    "harbor_failed": (
        "ServiceOperationsUnsupportedError", "VercelScopeError", "DspyImportError",
        "MissingExtraError", "RegradeError"),
    "unclassified": ("NonZeroAgentExitCodeError",),
    "agent_exhausted_budget": (
        "AgentTimeoutError", "ContextWindowExceededError", "OutputTokenExceededError",
        "ContextLengthExceededError", "OutputLengthExceededError"),
    "agent_refused_task": ("AgentSafetyRefusalError", "ContentPolicyViolationError"),
    "verifier_failed": (
        "VerifierTimeoutError", "RewardFileNotFoundError", "RewardFileEmptyError",
        "VerifierOutputParseError"),
    "cancelled": ("CancelledError",),
}

CAUSES = MappingProxyType({name: cause for cause, names in _BY_CAUSE.items()
                           for name in names})
"""Harbor :data:`VERSION`'s table: exception type name → ``FailureCause`` value."""


def harbor_failure_classes() -> dict[str, str]:
    """gsme's class of each exception type in Harbor's table: ``"agent"`` where Harbor's
    policy leaves the reward valid, else ``"infra"``. The installed Harbor's table when
    ``harbor`` is importable, else :data:`CAUSES`.

    Examples
    --------
    >>> classes = harbor_failure_classes()
    >>> classes["ContextLengthExceededError"], classes["RewardFileNotFoundError"]
    ('agent', 'infra')
    """
    try:
        from harbor.models.trial.error_policy import ERROR_POLICIES
    except ImportError:
        return {name: "agent" if cause in VALID_CAUSES else "infra"
                for name, cause in CAUSES.items()}
    return {str(name): "agent" if policy.reward_valid else "infra"
            for name, policy in ERROR_POLICIES.items()}
