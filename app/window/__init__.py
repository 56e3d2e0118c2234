"""The main window by concern (mixed into :class:`app.mainwindow.MainWindow`)."""
