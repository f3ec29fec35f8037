"""cdp: Volcano's cool-down protection, named so a Volcano conf that lists it loads unchanged.

In lahar the rule it adds in Volcano (a running pod with `volcano.sh/cooldown-time` is no victim of preempt
or reclaim until that long after it started) is always on: preempt and reclaim apply it to their candidates
before any plugin answers (actions/common.py `in_cooldown`). A pod that asks for protection gets it whether
or not the conf names cdp, and Volcano's quirk is gone: there an all-protected answer is empty, which voids
the tier, and a later tier's answer may then evict the protected pods. So the plugin adds nothing.
"""

from __future__ import annotations

from services.scheduler.core.framework.plugin import Plugin


class CooldownProtectionPlugin(Plugin):
    name = "cdp"
