"""Reference solutions of chapter 08: scheduling."""
from __future__ import annotations

VARIABLES = {"check_wfbp_time": "answer", "check_mg_wfbp_messages": "answer", "check_best_bucket": "answer"}


def wfbp_time():
    """Exercise 1: WFBP's iteration (ms) on the toy model, by the recurrence tau_c(l)."""
    t_f, t_b, grad_mb = [1, 1, 1, 1], [2, 2, 2, 2], [1, 4, 4, 1]

    def t_c(mb):
        return 1 + mb                                  # an all-reduce of n MB: 1 + n ms

    L = len(t_b)
    ready = {l: sum(t_b[l:]) for l in range(L)}        # backward runs from layer L-1 down to 0
    done = 0.0
    for l in reversed(range(L)):                        # one message per layer, first come first served
        tau = max(done, ready[l])
        done = tau + t_c(grad_mb[l])
    return done + sum(t_f)                             # the next forward starts after layer 0's message


def mg_wfbp_messages():
    """Exercise 2: MG-WFBP's messages on the toy model, merging l into l-1 if tau_c(l) > ready(l-1) - a."""
    t_b, grad_mb, a = [2, 2, 2, 2], [1, 4, 4, 1], 1.0

    def t_c(mb):
        return a + mb

    L = len(t_b)
    ready = {l: sum(t_b[l:]) for l in range(L)}

    def starts(groups):                                # WFBP's recurrence over the messages in send order
        out, done = [], 0.0
        for g in groups:
            out.append(max(done, max(ready[l] for l in g)))
            done = out[-1] + t_c(sum(grad_mb[l] for l in g))
        return out

    groups, i = [[l] for l in reversed(range(L))], 0
    while i + 1 < len(groups):
        below = groups[i + 1][0]                       # layer l - 1
        if starts(groups)[i] > ready[below] - a:
            groups[i + 1] = groups[i] + groups[i + 1]  # merge, then recompute the starts
            del groups[i]
        else:
            i += 1
    return groups


def best_bucket():
    """Exercise 3: the bucket size (MB) among 1, 4, 8, 12, 16 with the shortest fusion iteration."""
    from commlab import schedule
    from commlab.schedule import Profile

    ms, MB = 1e-3, 1_000_000
    profile = Profile([1 * ms] * 4, [2 * ms] * 4, [4 * MB] * 4)

    def comm_time(n):
        return (3 + 0.5 * n / MB) * ms                # an all-reduce of n MB: 3 + 0.5 n ms

    def iteration(mb):
        plan = schedule.get(f"fusion(mb={mb}, first_mb={mb})").plan(profile, comm_time)
        return schedule.iteration(plan, profile, comm_time)[0]

    return min([1, 4, 8, 12, 16], key=lambda mb: (iteration(mb), mb))
