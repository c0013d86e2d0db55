//! Simulated boards: synthesise what a DGT board and clock send while people play a game.
