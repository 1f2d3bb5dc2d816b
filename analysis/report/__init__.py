"""What is shown: claims as paper-style tables and their footer (`report`), the forest plot
(`forest`), learning curves (`learning`), infilling and training-size summaries (`summaries`), each
arm alone beside the paper (`alone`). Imports only lower rooms. Import-free: import the module you use."""
