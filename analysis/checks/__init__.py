"""What is checked before a run counts: the guardrails between runs (`guardrails`), each seed pair
(`pairs`), what an arm is (`arms`), each run against its own tables (`run_checks`), runs validated on their test split
(`validation`), a variant against its encoder (`labels`), the one checked path from the runs table to
one run per slot (`selection`), and the runs' protocol against the paper's (`protocol`); every guardrail by name and scope, run by
selection and the claims (`registry`). Imports only
lower rooms (tables, stats). Import-free: import the module you use."""
