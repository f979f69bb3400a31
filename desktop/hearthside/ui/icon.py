"""The Hearthside icon, drawn at run time so the app ships no binary art it cannot rebuild."""

from __future__ import annotations

from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QBrush, QColor, QIcon, QPainter, QPainterPath, QPixmap


def hearth_pixmap(size: int = 64, badge: bool = False) -> QPixmap:
    """A warm rounded square with a flame; ``badge`` adds a red dot (something needs you)."""
    pm = QPixmap(size, size)
    pm.fill(Qt.GlobalColor.transparent)
    p = QPainter(pm)
    p.setRenderHint(QPainter.RenderHint.Antialiasing)
    s = float(size)
    p.setPen(Qt.PenStyle.NoPen)
    p.setBrush(QBrush(QColor("#7a2e12")))
    p.drawRoundedRect(QRectF(s * 0.04, s * 0.04, s * 0.92, s * 0.92), s * 0.2, s * 0.2)
    flame = QPainterPath()
    flame.moveTo(QPointF(s * 0.5, s * 0.14))
    flame.cubicTo(QPointF(s * 0.78, s * 0.42), QPointF(s * 0.80, s * 0.60), QPointF(s * 0.72, s * 0.74))
    flame.cubicTo(QPointF(s * 0.64, s * 0.88), QPointF(s * 0.36, s * 0.88), QPointF(s * 0.28, s * 0.74))
    flame.cubicTo(QPointF(s * 0.20, s * 0.60), QPointF(s * 0.26, s * 0.44), QPointF(s * 0.5, s * 0.14))
    p.setBrush(QBrush(QColor("#ffb347")))
    p.drawPath(flame)
    inner = QPainterPath()
    inner.moveTo(QPointF(s * 0.5, s * 0.42))
    inner.cubicTo(QPointF(s * 0.64, s * 0.58), QPointF(s * 0.64, s * 0.78), QPointF(s * 0.5, s * 0.80))
    inner.cubicTo(QPointF(s * 0.36, s * 0.78), QPointF(s * 0.36, s * 0.58), QPointF(s * 0.5, s * 0.42))
    p.setBrush(QBrush(QColor("#fff3c4")))
    p.drawPath(inner)
    p.setBrush(QBrush(QColor("#5a1f0a")))
    p.drawRoundedRect(QRectF(s * 0.2, s * 0.82, s * 0.6, s * 0.08), s * 0.03, s * 0.03)
    if badge:
        p.setBrush(QBrush(QColor("#e0245e")))
        p.drawEllipse(QRectF(s * 0.62, s * 0.0, s * 0.38, s * 0.38))
    p.end()
    return pm


def hearth_icon(badge: bool = False) -> QIcon:
    icon = QIcon()
    for size in (16, 22, 24, 32, 48, 64, 128):
        icon.addPixmap(hearth_pixmap(size, badge))
    return icon
