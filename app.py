"""RISE explorer home page (placeholder until the explorer lands)."""

import streamlit as st

st.set_page_config(page_title="RISE attribution explorer", layout="wide")
st.title("RISE attribution explorer")
st.write("Forward-only training-data attribution: which training examples drive a generation.")
