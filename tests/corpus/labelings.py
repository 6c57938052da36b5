"""The exact symmetries of the corpus's symmetric models, as maps between parameter names.

A reference run stays in the one labeling its chains started in; vbn relabels its draws to a
pivot labeling of its own choosing (`--relabel pivot`). Both are right, and they differ by an
element of the model's symmetry group. To compare parameters within one labeling, check.py
finds the element that carries vbn's means closest to the reference's (`align`) and applies
it to vbn's draws. The groups are small (2 labelings for a single hidden class, 48 for three
exchangeable hidden units, 384 for sbn2), so every element is tried.

A labeling maps each hidden group's units: new unit j is s_j times old unit σ(j). A weight
on unit j (as a parent, or in the unit's own CPD) then becomes s_j times the weight on old
unit σ(j); a weight between two hidden units carries both signs.
"""
import itertools
import re

# Per model: the hidden groups (name -> number of units), and per parameter a pair
# (axes, signed): for each index of the parameter the hidden group it runs over (None: it runs
# over observed nodes), and the groups whose flip negates it (a group with one unit need not be
# an axis). E.g. sbn2's U[j, k] is unit h[j]'s weight on its parent t[k].
SPECS = {
    "survey": {"groups": {"c": 1}, "params": {"a": ([], ["c"]), "w": ([None], ["c"])}},
    "housevotes": {"groups": {"c": 1}, "params": {"a": ([], ["c"]), "w": ([None], ["c"])}},
    "sbn2": {"groups": {"t": 2, "h": 3},
             "params": {"c": (["h"], ["h"]), "U": (["h", "t"], ["h", "t"]), "W": ([None, "h"], ["h"])}},
    "sbn_3x8": {"groups": {"h": 3}, "params": {"W": ([None, "h"], ["h"])}},
}

NAME = re.compile(r"^([A-Za-z_]\w*)(?:\[([0-9,]+)\])?$")


def parse(name):
    m = NAME.match(name)
    return m.group(1), [int(i) for i in m.group(2).split(",")] if m.group(2) else []


def labelings(model):
    """Every element of the model's symmetry group, as {group: (sigma, signs)} (0-based sigma)."""
    groups = SPECS[model]["groups"]
    per_group = []
    for g, n in groups.items():
        per_group.append([(g, sigma, signs) for sigma in itertools.permutations(range(n))
                          for signs in itertools.product((1, -1), repeat=n)])
    for combo in itertools.product(*per_group):
        yield {g: (sigma, signs) for g, sigma, signs in combo}


def mapping(model, names, labeling):
    """For each name, (source name, sign): the new value of `name` is sign * old value of source."""
    params = SPECS[model]["params"]
    out = {}
    for name in names:
        base, idx = parse(name)
        if base not in params:
            out[name] = (name, 1)
            continue
        axes, signed = params[base]
        src, sign = list(idx), 1
        for k, g in enumerate(axes):
            if g is not None:
                src[k] = labeling[g][0][idx[k] - 1] + 1
        for g in signed:
            unit = idx[axes.index(g)] - 1 if g in axes else 0
            sign *= labeling[g][1][unit]
        out[name] = (f"{base}[{','.join(map(str, src))}]" if src else base, sign)
    return out


def align(model, means, reference):
    """The mapping (see `mapping`) under which vbn's means lie closest to the reference's:
    the least sum over parameters of ((mapped mean - reference mean) / reference sd)^2.
    means: name -> mean; reference: name -> (mean, sd)."""
    names = list(reference)
    best, best_cost = None, float("inf")
    for labeling in labelings(model):
        m = mapping(model, names, labeling)
        cost = sum(((s * means[src] - reference[n][0]) / reference[n][1]) ** 2 for n, (src, s) in m.items())
        if cost < best_cost:
            best, best_cost = m, cost
    return best


def self_test():
    """Each group's size, and that a mapped mapping is a permutation with signs."""
    sizes = {"survey": 2, "sbn2": 384, "sbn_3x8": 48}
    for model, size in sizes.items():
        assert sum(1 for _ in labelings(model)) == size, model
    names = [f"U[{j},{k}]" for j in (1, 2, 3) for k in (1, 2)]
    lab = {"t": ((1, 0), (1, -1)), "h": ((2, 0, 1), (-1, 1, 1))}
    m = mapping("sbn2", names, lab)
    assert m["U[1,1]"] == ("U[3,2]", -1) and m["U[2,2]"] == ("U[1,1]", -1), m
    assert sorted(src for src, _ in m.values()) == sorted(names)


if __name__ == "__main__":
    self_test()
    print("labelings: ok")
