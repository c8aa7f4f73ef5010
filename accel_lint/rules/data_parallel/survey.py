"""Survey a DataParallel script: everything the migration steps edit, from each
concern's own survey function, or `NoFix` with the reason the shape is beyond
the codemod."""

from __future__ import annotations

from collections.abc import Sequence

import libcst as cst

from accel_lint.facts import CallSite, FileFacts
from accel_lint.rules.data_parallel.directories import directory_calls
from accel_lint.rules.data_parallel.process_group import check_devices, end_of, setup_position
from accel_lint.rules.data_parallel.rank_zero import rank_zero_lines
from accel_lint.rules.data_parallel.region import Region
from accel_lint.rules.data_parallel.samplers import training_loaders
from accel_lint.rules.data_parallel.shape import (
    ALREADY_DISTRIBUTED,
    NoFix,
    Reference,
    Shape,
    depth_of,
)
from accel_lint.rules.data_parallel.spelling import choose_names
from accel_lint.rules.data_parallel.trainer import is_trainer_wrap, survey_trainer
from accel_lint.rules.data_parallel.tree import Tree
from accel_lint.rules.data_parallel.wrap import find_wrap, import_statement, isinstance_references


def survey_script(
    site: CallSite,
    facts: FileFacts,
    tree: Tree,
    references: Sequence[Reference],
    branches: Sequence[cst.Call] = (),
) -> Shape:
    """What the migration of the DataParallel call at `site` edits (and of `branches`,
    the same model wrapped in the other branches of one `if`)."""
    if facts.is_distributed:
        raise NoFix(ALREADY_DISTRIBUTED)
    if not branches and is_trainer_wrap(site.node, tree):
        # `self.model = DataParallel(self.model)` in a trainer class's `__init__`
        return survey_trainer(site, facts, tree, references)
    scope = site.scope
    wrap, block = find_wrap(site.node, scope, tree, facts, branches)
    check_devices(facts, tree)
    renamed = isinstance_references(wrap, references, tree)
    setup_before = setup_position(block, scope)
    region = Region(facts, tree, block, setup_before)
    loaders, epoch_loops = training_loaders(facts, tree, block, scope, region)
    end, end_is_return = end_of(block)
    rank_zero = rank_zero_lines(facts, tree, region, wrap.target)
    helper_scopes = [facts.scope_of[f] for f in region.helpers if f in facts.scope_of]
    names = choose_names(
        tree.module,
        facts.module_scope,
        [scope, *helper_scopes],
        site.node.func,
        import_statement(site.node.func, scope, tree),
    )
    return Shape(
        tree=tree,
        module=tree.module,
        wrap=wrap,
        block=block,
        depth=depth_of(block, tree),
        setup_before=setup_before,
        end=end,
        end_is_return=end_is_return,
        loaders=loaders,
        epoch_loops=epoch_loops,
        rank_zero=rank_zero,
        references=renamed,
        directories=directory_calls(region.sites),
        names=names,
    )
