"""LLMs on MWP benchmarks, with reexamination (`psedual llm`)."""
