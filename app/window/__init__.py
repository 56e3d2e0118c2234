"""The main window's controllers, one object per concern (composed and wired by
:class:`app.mainwindow.MainWindow`; they never import each other): ``data.DataController``,
``jobs.JobsController``, ``results.ResultsController``, ``sessions.SessionsController``,
``menus.Menus``, ``dragdrop.DropFilter``; ``common`` holds what they share."""
