"""Scenarios written in YAML, with no code: tables, declarative tools, verifiers, a plan.

This package compiles them, one module per part of the file. The format is documented in
docs/AUTHORING.md. In short, one YAML document is one scenario (``---`` separates several in
a file)::

    id: library-renew-loan
    description: ...
    domain: library
    instruction: "Member {member_id} asks to renew loan {loan_id}."
    tables: {policies: [{clause: L1, text: ...}]}          # literal rows
    generate:                                                # rows made by faker from the seed
      loans: {count: 6, key: loan_id,
              fields: {loan_id: "LN-{random_int:1000-9999}", email: email,
                       status: {choice: [open, overdue]}}}
    target: {table: loans, where: {status: open}}            # the task's row -> givens
    tools: {lookup_loan: {kind: lookup, table: loans, key: loan_id}, ...}
    checks: [{name: renewed, expect: "tables.loans[loan_id={loan_id}].status == renewed"}]
    solution: {steps: [{id: loan, call: lookup_loan, args: {loan_id: "{loan_id}"}}],
               answer: "Renewed $loan.loan_id."}

Only ``module:function`` references (``kind: python`` tools, ``function:`` checks) run
code; they resolve through the ``custom_tool`` / ``verifier`` registries, which Python
authors fill with decorated factories. Every error names the file, the line, the key path,
what was expected and what was found, with a "did you mean" for misspelled names.
"""

from chaoseval.loading.yamlform.document import YamlScenario, compile_document, load_yaml_file
from chaoseval.loading.yamlform.factories import custom_tool, verifier

__all__ = ["YamlScenario", "compile_document", "custom_tool", "load_yaml_file", "verifier"]
