"""The test suite's plugins: fixtures, markers and helpers that more than one test module
uses. tests/conftest.py loads them (``pytest_plugins``); a test module that needs one of
their helper functions imports it from here (``from plugins.checkout import ROOT``),
never from a conftest.py. pyproject.toml's [tool.pytest.ini_options] puts tests/ on
sys.path for that."""
